// Package cheap leaves stale words in the C heap, for tests of code that
// stores Go pointers into C memory.
//
// Go's write barrier reads the old word of every pointer slot it writes
// while the collector marks. A slot in fresh C.malloc memory holds whatever
// the last user of that chunk left there; if that was the address of a Go
// object since freed, the collector stops the process with "found bad
// pointer in Go heap". gorgonia.org/cu's Function.Launch writes its argument
// addresses into such memory (admpo's device/cuda launches through its own
// cgo instead). Poison makes the condition certain instead of rare.
package cheap
