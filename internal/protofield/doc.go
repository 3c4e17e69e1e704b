// Package protofield reads the length-delimited fields of a protobuf
// message without its schema: the ONNX walks of infer (which graphs CUDA
// can run) and of onnx's tests (which ops an export holds) share it.
package protofield
