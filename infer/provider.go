package infer

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	ort "github.com/yalue/onnxruntime_go"
)

// CUDAProviderEnv names the environment variable that overrides the path of
// ONNX Runtime's CUDA provider library (CUDAProviderPath).
const CUDAProviderEnv = "ADMPO_ORT_CUDA_PROVIDER"

// CUDAOptionsEnv names the environment variable that replaces the CUDA
// provider's options (CUDAOptions): comma-separated key=value pairs, or
// "none" for no options at all.
const CUDAOptionsEnv = "ADMPO_CUDA_EP_OPTIONS"

// CUDAProviderPath is the CUDA provider library that Provider "cuda"
// registers: $ADMPO_ORT_CUDA_PROVIDER when set, else
// GPUDir()/libonnxruntime_providers_cuda.so (`make setup-gpu`).
func CUDAProviderPath() string {
	if p := os.Getenv(CUDAProviderEnv); p != "" {
		return p
	}
	return filepath.Join(GPUDir(), "libonnxruntime_providers_cuda.so")
}

// CUDAOptions are the CUDA provider options of every "cuda" session: by
// default use_tf32=0, so that matrix products run in full float32 as on the
// CPU (ONNX Runtime's CUDA provider otherwise uses TF32 tensor cores, about
// 1e-3 relative error), or what $ADMPO_CUDA_EP_OPTIONS says.
func CUDAOptions() (map[string]string, error) {
	v, ok := os.LookupEnv(CUDAOptionsEnv)
	if !ok {
		return map[string]string{"use_tf32": "0"}, nil
	}
	opts := map[string]string{}
	v = strings.TrimSpace(v)
	if v == "" || v == "none" {
		return opts, nil
	}
	for _, kv := range strings.Split(v, ",") {
		k, val, ok := strings.Cut(strings.TrimSpace(kv), "=")
		if !ok || k == "" {
			return nil, fmt.Errorf("infer: %s=%q: %q is not key=value (want e.g. use_tf32=0,device_id=0, or none)", CUDAOptionsEnv, v, kv)
		}
		opts[k] = val
	}
	return opts, nil
}

// appendCUDA adds the CUDA execution provider to so with the options of
// CUDAOptions: in an admpo_cuda build through the plugin provider API
// (CUDAProviderPath registered once per process, its GPU device appended),
// or, where that fails and the loaded core is itself a CUDA build, through
// the older AppendExecutionProviderCUDA. Without the tag it fails, naming
// the tag and `make setup-gpu`.
func appendCUDA(so *ort.SessionOptions) error {
	opts, err := CUDAOptions()
	if err != nil {
		return err
	}
	if err := appendCUDAPlugin(so, opts); err != nil {
		return fmt.Errorf("infer: provider cuda: %w", err)
	}
	return nil
}

// formatOptions prints provider options as sorted key=value pairs.
func formatOptions(opts map[string]string) string {
	kv := make([]string, 0, len(opts))
	for k, v := range opts {
		kv = append(kv, k+"="+v)
	}
	sort.Strings(kv)
	return "{" + strings.Join(kv, ",") + "}"
}
