package ckpt

import "hash/crc32"

func crcOf(b []byte) uint32 { return crc32.ChecksumIEEE(b) }
