// Package ckpt is admpo's checkpoint container: an ordered list of named
// sections (float32 tensors or raw bytes) in one file, written atomically
// and verified on reading.
//
// Layout (little endian):
//
//	"ADMPOCKP"  magic, 8 bytes
//	uint32      format version (1)
//	uint32      number of sections
//	per section:
//	  uint8     kind: 1 = float32 tensor, 2 = bytes
//	  uint32    name length, then the name (UTF-8)
//	  uint64    element count (float32 values or bytes), then the data
//	uint32      CRC-32 (IEEE) of every byte above
//	"ADMPOEND"  magic, 8 bytes
//
// A file that is truncated, altered, of another version or not a checkpoint
// is refused with an error that says which.
package ckpt
