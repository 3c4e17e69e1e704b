// Package cuda is a device.Device on an NVIDIA GPU, built only with the
// admpo_cuda tag.
//
// It works in the device's primary context (the one ONNX Runtime uses, so
// both can share buffers) on one stream of its own, through
// gorgonia.org/cu. The kernels are the PTX of package device/kernels,
// embedded in the binary and JIT-compiled by the driver when Open loads
// them. cuBLAS is opened at run time by package device/cuda/cublas
// (libcublas.so.13, .12 or .11, or the file ADMPO_CUBLAS names), so a binary
// built against Debian's CUDA 11.8 toolkit runs on hosts with cuBLAS 13;
// only libcuda.so.1 is linked.
//
// Kernels are launched through this package's own cgo (launch.go), not cu's
// Function.Launch, which stores pointers into uninitialised C memory and can
// crash the garbage collector (TestLaunchUnderGC).
//
// gorgonia.org/cu initialises the driver when the program starts and ends
// the process if that fails, so binaries that import this package start
// only where an NVIDIA driver and device exist. Its tests run the shared
// suite of device/devicetest only with ADMPO_GPU_TEST=1.
//
// On a GPU host without Go, build the test binary here and take it along
// (the package links only libcuda.so.1 and glibc; its test binary also
// links OpenBLAS, as admpo does, for the CPU SAC that TestSAC compares
// with):
//
//	go test -c -tags admpo_cuda -o device.test ./device/cuda/
//
// and run it there, pointing at the host's cuBLAS if the loader does not
// find it:
//
//	lib=$(find / -name 'libcublas.so.13' 2>/dev/null | head -1)
//	ADMPO_GPU_TEST=1 ADMPO_CUBLAS=$lib LD_LIBRARY_PATH=$(dirname $lib) \
//		./device.test -test.v -test.run . -test.bench 'MLPStep|SAC|ADM|BCStep|Ensemble'
//
// TestTimeMLP prints the milliseconds per device-resident MLP train step
// (the SAC critic's shape); BenchmarkMLPStep reports the same as ms/step.
// TestSAC checks package sacdev's full SAC update against sac.Agent on the
// CPU; TestTimeSAC and BenchmarkSACUpdate time it (hopper's sizes, batch
// 256) in ms/update; BenchmarkSACSampleUpdate adds uploading each batch's
// indices and noise (sacdev.Learner.Sample from a device replay). TestADM
// checks package admdev's ADM train step against models' training graph on
// the CPU (also recorded as a CUDA graph); TestTimeADM, BenchmarkADMStep
// and BenchmarkADMGraphStep time it (3x200 GRU, four ResBlocks, m = 5,
// batch 256: issue 32's benchmark) in ms/step, directly and as one CUDA
// graph per step. TestBC checks sacdev's BC step against sac.BC and
// BenchmarkBCStep times it; TestEnsemble checks package ensdev's ensemble
// step against models' ensemble graph, and BenchmarkEnsembleStep and
// BenchmarkEnsembleGraphStep time it (seven 4x200 members, batch 256).
package cuda
