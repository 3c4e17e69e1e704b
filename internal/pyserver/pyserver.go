package pyserver

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// Python is the interpreter the tests use.
const Python = "/usr/bin/python3"

// Root is the repository's root directory.
func Root() string {
	_, file, _, _ := runtime.Caller(0)
	return filepath.Join(filepath.Dir(file), "..", "..")
}

// Server is a running Python environment server.
type Server struct {
	Addr string // tcp://127.0.0.1:PORT
	Cmd  *exec.Cmd
}

// Kill stops the server (and waits for it).
func (s *Server) Kill() {
	if s.Cmd.Process != nil {
		s.Cmd.Process.Kill()
		s.Cmd.Wait()
	}
}

// Start runs python3 -m admpo_env target --port 0 with python/ and the
// directories in path on PYTHONPATH, waits until it listens and returns
// it; the test's cleanup kills it. It skips the test, saying why, when
// /usr/bin/python3 is absent. args are extra server flags.
func Start(t testing.TB, target string, path []string, args ...string) *Server {
	t.Helper()
	if _, err := os.Stat(Python); err != nil {
		t.Skipf("skipping: the Python environment server needs %s: %v", Python, err)
	}
	pp := append([]string{filepath.Join(Root(), "python")}, path...)
	cmd := exec.Command(Python, append([]string{"-m", "admpo_env", target, "--port", "0"}, args...)...)
	cmd.Env = append(os.Environ(), "PYTHONPATH="+strings.Join(pp, string(os.PathListSeparator)), "PYTHONUNBUFFERED=1")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	s := &Server{Cmd: cmd}
	t.Cleanup(s.Kill)
	lines := make(chan string, 16)
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	var seen []string
	timeout := time.After(30 * time.Second)
	for {
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("python server %s exited before listening: %s", target, strings.Join(seen, "\n"))
			}
			seen = append(seen, l)
			if i := strings.Index(l, " on tcp://"); strings.HasPrefix(l, "admpo_env: serving") && i >= 0 {
				s.Addr = l[i+4:]
				go func() { // keep draining (tracebacks) so the server never blocks on stderr
					for l := range lines {
						t.Log("python server:", l)
					}
				}()
				return s
			}
		case <-timeout:
			t.Fatalf("python server %s did not start in 30s: %s", target, strings.Join(seen, "\n"))
		}
	}
}
