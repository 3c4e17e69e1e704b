// Package infer runs exported admpo models on ONNX Runtime through
// github.com/yalue/onnxruntime_go: policies and batched ADM roll-outs.
// It never imports the training code.
package infer
