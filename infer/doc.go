// Package infer runs exported admpo models on ONNX Runtime through
// github.com/yalue/onnxruntime_go: policies and batched ADM roll-outs.
// The incremental roll-out engine can keep its state in ONNX Runtime's
// own buffers between steps (Options.Binding, through package iobind).
// It never imports the training code.
package infer
