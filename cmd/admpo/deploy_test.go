package main

import (
	"bufio"
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/admpo/admpo/evaluate"
	"github.com/admpo/admpo/internal/bundlefix"
	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/policies"
)

// testBundle writes a bundle of a random hopper-sized actor.
func testBundle(t *testing.T) string {
	dir, _ := bundlefix.Hopper(t, 1, "sac-on", policies.RunOnline)
	return dir
}

// TestNoSuccessMessageBeforeSuccess: serve on a busy port fails without
// having printed "serving ... on"; train online into a directory that
// already holds a run fails without "config (saved to ...)".
func TestNoSuccessMessageBeforeSuccess(t *testing.T) {
	bin := buildBinary(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	r := runBin(t, bin, nil, "serve", "--runtime", "go", "--bundle", testBundle(t), "--addr", ln.Addr().String())
	if r.code != 1 || strings.Contains(r.stdout, "serving") || !strings.Contains(r.stderr, "address already in use") {
		t.Fatalf("serve on a busy port: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "config.json"), []byte("{}"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = runBin(t, bin, nil, "train", "online", "--env", "hopper", "--steps", "10", "--out", dir)
	if r.code == 0 || strings.Contains(r.stdout, "saved to") || !strings.Contains(r.stderr, "already holds a run") {
		t.Fatalf("train online over a run: exit %d, stdout %q, stderr %q", r.code, r.stdout, r.stderr)
	}
}

// TestHelpAndVersion: every command's and sub-command's --help goes to
// stdout with exit 0 and nothing on stderr; `admpo help CMD SUB` shows the
// sub-command's help; `admpo version` prints the version line.
func TestHelpAndVersion(t *testing.T) {
	bin := buildBinary(t)
	all := append([][]string{{"train"}, {"bench"}, {"envs"}, {"experiment"}, {"version"}}, invocations...)
	for _, inv := range all {
		for _, h := range []string{"--help", "-h"} {
			r := runBin(t, bin, nil, append(append([]string(nil), inv...), h)...)
			if r.code != 0 || r.stderr != "" || !strings.HasPrefix(r.stdout, "Usage: admpo "+inv[0]) {
				t.Errorf("admpo %s %s: exit %d, stdout %.80q, stderr %q", strings.Join(inv, " "), h, r.code, r.stdout, r.stderr)
			}
		}
	}
	for _, inv := range [][]string{{"train", "online"}, {"train", "offline"}, {"bench", "serve"}, {"export"}} {
		want := runBin(t, bin, nil, append(append([]string(nil), inv...), "--help")...)
		got := runBin(t, bin, nil, append([]string{"help"}, inv...)...)
		if got.code != 0 || got.stdout != want.stdout || !strings.Contains(got.stdout, "Usage: admpo "+strings.Join(inv, " ")) {
			t.Errorf("admpo help %s: exit %d, stdout %.120q; want %s --help's", strings.Join(inv, " "), got.code, got.stdout, strings.Join(inv, " "))
		}
	}
	if r := runBin(t, bin, nil, "help", "frobnicate"); r.code != 2 || !strings.Contains(r.stderr, "unknown command") {
		t.Errorf("help of an unknown command: exit %d, %q", r.code, r.stderr)
	}
	if r := runBin(t, bin, nil, "train"); r.code != 2 || !strings.Contains(r.stderr, "needs a sub-command") {
		t.Errorf("train without a sub-command: exit %d, %q", r.code, r.stderr)
	}
	for _, args := range [][]string{{"version"}, {"--version"}} {
		r := runBin(t, bin, nil, args...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "admpo ") || !strings.Contains(r.stdout, runtime.Version()+" "+runtime.GOOS+"/"+runtime.GOARCH) {
			t.Errorf("admpo %s: exit %d, %q", args[0], r.code, r.stdout)
		}
	}
}

// TestEvalCommand: admpo eval --json on both runtimes gives the episodes
// that evaluate.Run gives in-process, the text form shows the same mean
// and the D4RL score; a bad runtime is a usage error and a task that is not
// built in an error.
func TestEvalCommand(t *testing.T) {
	ortskip.IfMissing(t)
	bin := buildBinary(t)
	bundle := testBundle(t)
	p, err := policies.Open(bundle, policies.Options{Runtime: "go"})
	if err != nil {
		t.Fatal(err)
	}
	want, err := evaluate.Run(p, evaluate.Config{Episodes: 2, Seed: 5})
	p.Close()
	if err != nil {
		t.Fatal(err)
	}
	for _, rt := range []string{"ort", "go"} {
		r := runBin(t, bin, nil, "eval", "--bundle", bundle, "--episodes", "2", "--seed", "5", "--runtime", rt, "--json")
		var got evaluate.Result
		if r.code != 0 || json.Unmarshal([]byte(r.stdout), &got) != nil {
			t.Fatalf("eval --runtime %s --json: exit %d, %q %q", rt, r.code, r.stdout, r.stderr)
		}
		if got.Runtime != rt || got.Task != "hopper" || got.Score == nil || !slices.Equal(got.Lengths, want.Lengths) ||
			math.Abs(got.ReturnMean-want.ReturnMean) > 1e-3*math.Max(1, math.Abs(want.ReturnMean)) {
			t.Fatalf("eval --runtime %s: %+v, want the episodes of %+v", rt, got, want)
		}
		r = runBin(t, bin, nil, "eval", "--bundle", bundle, "--episodes", "2", "--seed", "5", "--runtime", rt)
		if r.code != 0 || !strings.Contains(r.stdout, fmt.Sprintf("return %.1f", want.ReturnMean)) || !strings.Contains(r.stdout, "D4RL normalised score") {
			t.Fatalf("eval text: %q, want return %.1f", r.stdout, want.ReturnMean)
		}
	}
	if r := runBin(t, bin, nil, "eval", "--bundle", bundle, "--runtime", "tpu"); r.code != 2 {
		t.Errorf("--runtime tpu: exit %d %q", r.code, r.stderr)
	}
	if r := runBin(t, bin, nil, "eval", "--bundle", bundle, "--task", "robot-log"); r.code != 1 || !strings.Contains(r.stderr, "not a built-in task") {
		t.Errorf("--task robot-log: exit %d %q", r.code, r.stderr)
	}
}

// TestServeReloadsOnSIGHUP starts `admpo serve`, replaces the bundle on
// disk and sends SIGHUP: /v1/info shows the new bundle's sha256; a corrupt
// bundle and SIGHUP leave it serving the previous one; the admin route needs
// the token from --admin-token-file; SIGTERM ends it with exit 0.
func TestServeReloadsOnSIGHUP(t *testing.T) {
	bin := buildBinary(t)
	dir := testBundle(t)
	tokFile := filepath.Join(t.TempDir(), "admin-token")
	os.WriteFile(tokFile, []byte("0123456789abcdef-admin\n"), 0o600)
	cmd := exec.Command(bin, "serve", "--runtime", "go", "--bundle", dir, "--addr", "127.0.0.1:0", "--drain-delay", "0s", "--admin-token-file", tokFile)
	stdout, _ := cmd.StdoutPipe()
	var stderr syncBuffer
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer cmd.Process.Kill()
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var base string
	select {
	case l := <-lines:
		i := strings.Index(l, " on http://")
		if i < 0 {
			t.Fatalf("first line %q", l)
		}
		base = l[i+4:]
	case <-time.After(30 * time.Second):
		t.Fatalf("serve did not start: %s", stderr.String())
	}
	sha := func() string {
		resp, err := http.Get(base + "/v1/info")
		if err != nil {
			t.Fatal(err)
		}
		defer resp.Body.Close()
		var info struct {
			SHA256 string `json:"bundle_sha256"`
		}
		json.NewDecoder(resp.Body).Decode(&info)
		return info.SHA256
	}
	waitSHA := func(want string) {
		t.Helper()
		for end := time.Now().Add(10 * time.Second); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
			if sha() == want {
				return
			}
		}
		t.Fatalf("bundle sha256 %s, want %s; stderr %s", sha(), want, stderr.String())
	}
	digest := func(d string) string {
		b, err := policies.ReadBundle(d)
		if err != nil {
			t.Fatal(err)
		}
		return b.Digest()
	}
	first := digest(dir)
	waitSHA(first)
	// Replace the bundle with another policy (different seed and kind).
	repl, _ := bundlefix.Hopper(t, 2, "bc-off", policies.RunOffline)
	os.RemoveAll(dir)
	if err := os.Rename(repl, dir); err != nil {
		t.Fatal(err)
	}
	second := digest(dir)
	cmd.Process.Signal(syscall.SIGHUP)
	waitSHA(second)
	// A corrupt bundle is refused.
	os.WriteFile(filepath.Join(dir, policies.PolicyFile), []byte("garbage"), 0o644)
	cmd.Process.Signal(syscall.SIGHUP)
	for end := time.Now().Add(10 * time.Second); !strings.Contains(stderr.String(), "reload refused") && time.Now().Before(end); {
		time.Sleep(50 * time.Millisecond)
	}
	if !strings.Contains(stderr.String(), "reload refused") || sha() != second {
		t.Fatalf("after a corrupt bundle: sha %s (want %s), stderr %q", sha(), second, stderr.String())
	}
	for tok, want := range map[string]int{"wrong-token-xxxxxxxx": 401, "0123456789abcdef-admin": 422} {
		req, _ := http.NewRequest("POST", base+"/admin/reload", nil)
		req.Header.Set("Authorization", "Bearer "+tok)
		resp, err := http.DefaultClient.Do(req)
		if err != nil || resp.StatusCode != want {
			t.Fatalf("admin reload with %q: %v %v, want %d", tok, resp, err, want)
		}
		resp.Body.Close()
	}
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("serve after SIGTERM: %v; stderr %s", err, stderr.String())
	}
}

// syncBuffer is a bytes.Buffer safe to read while a process writes to it.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

// TestServeDrainOnSIGTERM: after SIGTERM `admpo serve` answers /healthz and
// /readyz with 503 while /v1/act still works; a second SIGTERM cuts the
// 60 s drain delay short and the process exits 0.
func TestServeDrainOnSIGTERM(t *testing.T) {
	bin := buildBinary(t)
	cmd, line := startServe(t, bin, "--runtime", "go", "--bundle", testBundle(t), "--addr", "127.0.0.1:0", "--drain-delay", "60s")
	base := line[strings.Index(line, " on http://")+4:]
	get := func(path string) int {
		resp, err := http.Get(base + path)
		if err != nil {
			t.Fatalf("GET %s: %v", path, err)
		}
		resp.Body.Close()
		return resp.StatusCode
	}
	if get("/healthz") != 200 || get("/readyz") != 200 {
		t.Fatal("not healthy before the drain")
	}
	cmd.Process.Signal(syscall.SIGTERM)
	deadline := time.Now().Add(10 * time.Second)
	for get("/healthz") != 503 && time.Now().Before(deadline) {
		time.Sleep(20 * time.Millisecond)
	}
	if get("/healthz") != 503 || get("/readyz") != 503 {
		t.Fatal("/healthz or /readyz did not turn 503 during the drain")
	}
	resp, err := http.Post(base+"/v1/act", "application/json", strings.NewReader(`{"obs":[0,0,0,0,0,0,0,0,0,0,0]}`))
	if err != nil || resp.StatusCode != 200 {
		t.Fatalf("act during the drain: %v %v", resp, err)
	}
	resp.Body.Close()
	start := time.Now()
	cmd.Process.Signal(syscall.SIGTERM)
	if err := cmd.Wait(); err != nil {
		t.Fatalf("after the second SIGTERM: %v", err)
	}
	if d := time.Since(start); d > 15*time.Second {
		t.Fatalf("the second SIGTERM took %v to end the drain", d)
	}
}

// startServe starts `admpo serve` with args, kills it when the test ends
// and returns it with the first line it printed (the address it serves on).
func startServe(t *testing.T, bin string, args ...string) (*exec.Cmd, string) {
	t.Helper()
	cmd := exec.Command(bin, append([]string{"serve"}, args...)...)
	stdout, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { cmd.Process.Kill() })
	sc := bufio.NewScanner(stdout)
	if !sc.Scan() {
		t.Fatal("serve printed nothing")
	}
	return cmd, sc.Text()
}

// TestHelpFiles: every help/NAME.txt belongs to a command whose --help shows
// its synopsis and text, and no command falls back to "no help text".
func TestHelpFiles(t *testing.T) {
	files, err := helpFiles.ReadDir("help")
	if err != nil {
		t.Fatal(err)
	}
	bin := buildBinary(t)
	for _, f := range files {
		name := strings.TrimSuffix(f.Name(), ".txt")
		syn, desc := commandHelp(strings.ReplaceAll(name, "-", " "))
		inv := strings.SplitN(name, "-", 2)
		if _, ok := commands[inv[0]]; !ok {
			t.Errorf("help/%s: no command %q", f.Name(), inv[0])
			continue
		}
		r := runBin(t, bin, nil, append(inv, "--help")...)
		if r.code != 0 || !strings.HasPrefix(r.stdout, "Usage: admpo "+syn+"\n\n"+desc+"\n\nFlags:\n") {
			t.Errorf("help/%s: `admpo %s --help` (exit %d) does not show it: %.200q", f.Name(), strings.Join(inv, " "), r.code, r.stdout)
		}
	}
	for _, inv := range invocations {
		r := runBin(t, bin, nil, append(append([]string(nil), inv...), "--help")...)
		if strings.Contains(r.stdout, "(no help text") {
			t.Errorf("admpo %s has no help file", strings.Join(inv, " "))
		}
	}
}
