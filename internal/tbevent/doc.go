// Package tbevent writes and reads TensorBoard event files: TFRecord
// framing (a little-endian uint64 length, its masked CRC-32C, the data and
// its masked CRC-32C) around Event protobufs holding scalar Summaries,
// encoded by hand with protowire. It imports no training code.
package tbevent
