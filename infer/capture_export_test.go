package infer

import ort "github.com/yalue/onnxruntime_go"

// CaptureRuns makes f see the input names and values of every Session.Run
// (before it runs) until stop is called. Tests only; not concurrent with
// other tests' runs.
func CaptureRuns(f func(names []string, inputs []ort.Value)) (stop func()) {
	runHook = f
	return func() { runHook = nil }
}
