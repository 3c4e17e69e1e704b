// Package regfile reads a regular file of bounded size without hanging on
// a FIFO or reading a device such as /dev/zero without end.
package regfile
