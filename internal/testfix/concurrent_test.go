package testfix

import (
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
)

// fatalRecorder is a testing.TB whose Fatal records its first message
// instead of stopping the test.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}
func (f *fatalRecorder) Fatal(args ...any) {
	if f.msg == "" {
		f.msg = fmt.Sprint(args...)
	}
}

func TestConcurrently(t *testing.T) {
	var ran atomic.Int32
	ok := &fatalRecorder{TB: t}
	Concurrently(ok, 16, func(g int) error { ran.Add(1); return nil })
	if ok.msg != "" || ran.Load() != 16 {
		t.Fatalf("all fine: failed with %q after %d of 16 goroutines", ok.msg, ran.Load())
	}
	bad := &fatalRecorder{TB: t}
	Concurrently(bad, 8, func(g int) error {
		if g == 5 || g == 2 {
			return errors.New("goroutine " + fmt.Sprint(g))
		}
		return nil
	})
	if bad.msg != "goroutine 2" {
		t.Fatalf("failed with %q, want the lowest failing goroutine's error", bad.msg)
	}
}
