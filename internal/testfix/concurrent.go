package testfix

import (
	"sync"
	"testing"
)

// Concurrently runs work(g) on n goroutines at once, g = 0..n-1, waits for
// all of them and fails t with the error of the lowest g that returned one.
func Concurrently(t testing.TB, n int, work func(g int) error) {
	t.Helper()
	errs := make([]error, n)
	var wg sync.WaitGroup
	for g := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			errs[g] = work(g)
		}()
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
}
