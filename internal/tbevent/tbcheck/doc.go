// Package tbcheck is a test helper: an independent reader of TensorBoard
// event files, in Python, for tests of the files admpo writes.
package tbcheck
