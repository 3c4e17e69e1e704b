// Package ortskip lets a test that needs ONNX Runtime skip where the library
// is not installed. Only tests import it; a package whose tests must not
// link ONNX Runtime (policies/goruntime) must not.
package ortskip
