// Package policies packages a trained admpo policy for deployment and runs
// it without any training code.
//
// A bundle is a directory holding policy.onnx (the SAC actor exported by
// admpo's onnx package), an optional adm.onnx (the Any-step Dynamics Model,
// used to monitor U^ADM at run time) and manifest.json (the Manifest: task,
// dimensions, bounds, normalisers, algorithm, m, the U^ADM calibration from
// training data, free-form provenance and the sha256 of every file).
// WriteBundle writes one atomically; Open verifies it and loads it on ONNX
// Runtime ("ort", the default) or on the pure-Go runtime ("go", no shared
// library needed: onnx-go decodes the model into admpo's own float32
// kernels over gonum's pure-Go BLAS).
//
// This package never imports admpo's train or models packages: a service
// that runs a policy links no training code.
package policies
