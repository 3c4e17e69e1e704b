// Package atomicfile writes files so that a crash never leaves half of one:
// the data goes to a temporary file in the same directory, is synced, and is
// renamed over the target.
package atomicfile
