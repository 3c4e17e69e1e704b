// Package bundlefix writes policy bundles of random actors for the tests of
// the packages that deploy them (evaluate, the admpo command). It sits above
// policies and onnx, so their own tests cannot use it. Only tests import it.
package bundlefix
