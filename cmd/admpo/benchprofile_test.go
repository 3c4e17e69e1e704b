package main

import (
	"bytes"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/admpo/admpo/benchmarks"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/train"
)

// TestBenchRolloutCPUProfile: bench rollout --cpuprofile writes a profile
// (gzip-compressed protobuf, as runtime/pprof writes it) and a path it
// cannot create is an error naming the flag.
func TestBenchRolloutCPUProfile(t *testing.T) {
	ortskip.IfMissing(t)
	dir := t.TempDir()
	prof := filepath.Join(dir, "cpu.pprof")
	args := []string{"rollout", "--engines", "direct", "--rows", "4", "--horizon", "1", "--m", "2", "--repeats", "1", "--json"}
	if _, err := captureStdout(t, func() error { return runBench(append(args, "--cpuprofile", prof)) }); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(prof)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.HasPrefix(b, []byte{0x1f, 0x8b}) {
		t.Fatalf("%s: %d bytes, not gzip", prof, len(b))
	}
	_, err = captureStdout(t, func() error {
		return runBench(append(args, "--cpuprofile", filepath.Join(dir, "missing", "cpu.pprof")))
	})
	if err == nil || !strings.Contains(err.Error(), "--cpuprofile") {
		t.Fatalf("unwritable profile path: %v, want an error naming --cpuprofile", err)
	}
}

// TestBenchRolloutORTProfile: bench rollout --ort-profile makes every
// roll-out session write an ONNX Runtime trace (the policy's and the direct
// engine's, for both styles: four sessions, four files), each a JSON array
// with node events; a directory that cannot take the files is an error,
// not a silently lost trace (ONNX Runtime itself says nothing).
func TestBenchRolloutORTProfile(t *testing.T) {
	ortskip.IfMissing(t)
	dir := t.TempDir()
	args := []string{"rollout", "--engines", "direct", "--rows", "4", "--horizon", "1", "--m", "2", "--repeats", "1", "--json"}
	if _, err := captureStdout(t, func() error { return runBench(append(args, "--ort-profile", filepath.Join(dir, "ort"))) }); err != nil {
		t.Fatal(err)
	}
	traces, err := filepath.Glob(filepath.Join(dir, "ort-*.json"))
	if err != nil {
		t.Fatal(err)
	}
	if len(traces) != 4 {
		t.Fatalf("traces %v, want 4 (policy and direct engine, two styles)", traces)
	}
	for _, f := range traces {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		var events []struct {
			Cat  string         `json:"cat"`
			Name string         `json:"name"`
			Args map[string]any `json:"args"`
		}
		if err := json.Unmarshal(b, &events); err != nil {
			t.Fatalf("%s: not a JSON trace: %v", f, err)
		}
		nodes := 0
		for _, e := range events {
			if e.Cat == "Node" && strings.HasSuffix(e.Name, "_kernel_time") && e.Args["op_name"] != nil {
				nodes++
			}
		}
		if nodes == 0 {
			t.Errorf("%s: %d events, no node kernel times", f, len(events))
		}
	}
	_, err = captureStdout(t, func() error {
		return runBench(append(args, "--ort-profile", filepath.Join(dir, "missing", "ort")))
	})
	if err == nil || !strings.Contains(err.Error(), "profiling to") {
		t.Fatalf("unwritable profile prefix: %v, want an error naming the profile", err)
	}
}

// TestORTProfileSummary checks scripts/gpu_ort_profile.py against sums made
// by hand on two small traces: Run totals from "model_run", node times from
// "_kernel_time" events only (the fences and other events are not counted),
// grouped by operator and provider; a file that is not a trace exits 2.
func TestORTProfileSummary(t *testing.T) {
	py, err := exec.LookPath("python3")
	if err != nil {
		t.Skip("no python3")
	}
	dir := t.TempDir()
	a := `[{"cat":"Session","name":"model_run","dur":1000},
	 {"cat":"Node","name":"g1_kernel_time","dur":100,"args":{"op_name":"Gemm","provider":"CPUExecutionProvider"}},
	 {"cat":"Node","name":"g1_fence_before","dur":7000,"args":{"op_name":"Gemm","provider":"CPUExecutionProvider"}},
	 {"cat":"Node","name":"a1_kernel_time","dur":50,"args":{"op_name":"Add","provider":"CUDAExecutionProvider"}}]`
	b := `[{"cat":"Session","name":"model_run","dur":500},
	 {"cat":"Session","name":"SequentialExecutor::Execute","dur":9000},
	 {"cat":"Node","name":"g2_kernel_time","dur":200,"args":{"op_name":"Gemm","provider":"CPUExecutionProvider"}}]`
	for name, text := range map[string]string{"a.json": a, "b.json": b, "bad.json": `{"not": "a trace"}`} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	script := filepath.Join("..", "..", "scripts", "gpu_ort_profile.py")
	out, err := exec.Command(py, script, filepath.Join(dir, "a.json"), filepath.Join(dir, "b.json")).CombinedOutput()
	if err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	for _, want := range []string{
		"Run calls 2, 1.5 ms in all; node kernel time 0.3 ms (23.3% of the Runs)",
		"| Gemm | CPUExecutionProvider | 2 | 0.30 | 85.7 | 150.0 |",
		"| Add | CUDAExecutionProvider | 1 | 0.05 | 14.3 | 50.0 |",
	} {
		if !strings.Contains(string(out), want) {
			t.Errorf("summary lacks %q:\n%s", want, out)
		}
	}
	cmd := exec.Command(py, script, filepath.Join(dir, "bad.json"))
	out, err = cmd.CombinedOutput()
	if cmd.ProcessState == nil || cmd.ProcessState.ExitCode() != 2 || !strings.Contains(string(out), "bad.json") {
		t.Errorf("not a trace: %v, exit %v, %s; want exit 2 naming the file", err, cmd.ProcessState, out)
	}
}

// TestBenchRolloutDevice: bench rollout --device emu times device-direct
// and device-incremental beside ONNX Runtime's engines, with and without
// the penalty, reported in the same columns; --engines picks one device
// engine; a device engine without --device, an unknown engine, an unknown
// device and, in a binary without the admpo_cuda tag, cuda are usage
// errors.
func TestBenchRolloutDevice(t *testing.T) {
	ortskip.IfMissing(t)
	args := []string{"rollout", "--rows", "40", "--horizon", "2", "--m", "3", "--repeats", "1", "--json", "--device", "emu"}
	out, err := captureStdout(t, func() error { return runBench(args) })
	if err != nil {
		t.Fatal(err)
	}
	var tab struct {
		Header  map[string]string `json:"environment"`
		Columns []string          `json:"columns"`
		Rows    [][]any           `json:"rows"`
	}
	if err := json.Unmarshal([]byte(out), &tab); err != nil {
		t.Fatalf("%v\n%s", err, out)
	}
	seen := map[string]int{}
	for _, r := range tab.Rows {
		if len(r) != len(tab.Columns) {
			t.Fatalf("row %v for columns %v", r, tab.Columns)
		}
		seen[r[1].(string)]++
		if v, ok := r[4].(float64); !ok || !(v > 0) {
			t.Errorf("row %v: transitions/s %v", r, r[4])
		}
	}
	if seen["device-direct"] != 2 || seen["device-incremental"] != 2 || seen["direct"] != 2 || seen["incremental"] != 2 || len(seen) != 4 {
		t.Errorf("engines %v, want direct, incremental, device-direct and device-incremental with and without the penalty", seen)
	}
	if tab.Header["device"] != "emu" {
		t.Errorf("header device %q", tab.Header["device"])
	}
	for _, e := range benchmarks.DeviceEngines {
		only := []string{"rollout", "--rows", "8", "--horizon", "1", "--m", "2", "--repeats", "1", "--json", "--device", "emu",
			"--engines", e}
		out, err := captureStdout(t, func() error { return runBench(only) })
		if err != nil || !strings.Contains(out, "\""+e+"\"") {
			t.Errorf("--engines %s: %v\n%s", e, err, out)
		}
		for _, other := range append([]string{"direct", "incremental"}, benchmarks.DeviceEngines...) {
			if other != e && strings.Contains(out, "\""+other+"\"") {
				t.Errorf("--engines %s times %s too:\n%s", e, other, out)
			}
		}
	}
	for _, c := range []struct {
		args  []string
		parts []string
	}{
		{[]string{"--engines", "device-direct"}, []string{"device-direct needs a device"}},
		{[]string{"--engines", "device-incremental"}, []string{"device-incremental needs a device"}},
		{[]string{"--engines", "device-graph", "--device", "emu"}, []string{"unknown engine \"device-graph\"", "device-direct, device-incremental"}},
		{[]string{"--device", "tpu"}, []string{"--device", "unknown"}},
	} {
		_, err := captureStdout(t, func() error { return runBench(append([]string{"rollout", "--rows", "4"}, c.args...)) })
		wantUsage(t, strings.Join(c.args, " "), err, "", c.parts...)
	}
	if !train.CUDABuilt {
		_, err := captureStdout(t, func() error { return runBench([]string{"rollout", "--rows", "4", "--device", "cuda"}) })
		wantUsage(t, "--device cuda", err, "", "admpo_cuda")
	}
}
