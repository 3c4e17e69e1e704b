package cheap

import (
	"os"
	"os/exec"
	"runtime"
	"strings"
	"testing"
)

// underGC calls store 200k times with freshly poisoned C chunks of size
// bytes while Churn keeps the collector marking.
func underGC(size int, store func()) {
	runtime.LockOSThread() // one thread: one malloc cache for Poison and store
	defer runtime.UnlockOSThread()
	words := FreedGoAddresses(64, 256<<10)
	stop := Churn()
	for i := 0; i < 200000; i++ {
		Poison(size, 8, words[i%len(words)])
		store()
	}
	stop()
	runtime.GC()
}

// TestChild is the body run in a child process by the tests below.
func TestChild(t *testing.T) {
	switch os.Getenv("CHEAP_CHILD") {
	case "cu":
		underGC(3*8, func() { StoreLikeCu(3) })
	case "zeroed":
		underGC(3*8, func() { StoreZeroed(3) })
	default:
		t.Skip("run by TestCuPatternDies and TestZeroedSurvives")
	}
}

func child(t *testing.T, mode string) (string, error) {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run", "^TestChild$", "-test.count", "1")
	cmd.Env = append(os.Environ(), "CHEAP_CHILD="+mode)
	out, err := cmd.CombinedOutput()
	return string(out), err
}

// TestCuPatternDies shows that Poison turns cu's pattern (pointers stored
// into fresh malloc memory) into a certain crash of the collector: the
// condition the launch test in device/cuda relies on.
func TestCuPatternDies(t *testing.T) {
	out, err := child(t, "cu")
	if err == nil || !strings.Contains(out, "found bad pointer in Go heap") {
		t.Fatalf("cu's pattern over poisoned C memory survived (err %v):\n%s", err, tail(out))
	}
}

// TestZeroedSurvives runs the same stores over calloc'd memory.
func TestZeroedSurvives(t *testing.T) {
	out, err := child(t, "zeroed")
	if err != nil {
		t.Fatalf("stores into zeroed C memory failed: %v\n%s", err, tail(out))
	}
}

func tail(s string) string {
	l := strings.Split(s, "\n")
	if len(l) > 15 {
		l = l[:15]
	}
	return strings.Join(l, "\n")
}
