// Package rolldevtest checks a rolldev.Direct on any device against two
// independent ADM forwards on the CPU: package models' Go forward
// (ADM.GRUStep and ADM.HeadDropout) and the packed ONNX graph
// (onnx.ExportADM) run by ONNX Runtime through infer.ADMDirect, with MC
// dropout's masks from infer.DropoutKeep; and it times Predict. It is for
// tests only (device/rolldev's on emu, device/cuda's on a GPU): it links
// models, onnx and infer, which the device packages never do.
package rolldevtest
