// Package cublas opens cuBLAS at run time (dlopen) and calls the few
// functions package device/cuda needs through C trampolines: create and
// destroy a handle, bind it to a stream, set its math mode, read its
// version, and cublasSgemm. Nothing links -lcublas, so one binary runs with
// cuBLAS 11, 12 or 13, whichever the host has.
//
// Load tries, in order: the file ADMPO_CUBLAS names (only that one when it
// is set), libcublas.so.13, .12 and .11 through the dynamic loader's search
// path, then the same names in /usr/local/cuda*/lib64 and in the nvidia-*
// wheels of common Python installs. Nothing here needs a GPU until a
// handle is made.
package cublas
