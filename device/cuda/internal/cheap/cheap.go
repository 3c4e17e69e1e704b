package cheap

/*
#include <stdint.h>
#include <stdlib.h>

static void cheapPoison(size_t size, int n, uintptr_t word) {
	void *p[64];
	if (n > 64) n = 64;
	for (int i = 0; i < n; i++) {
		p[i] = malloc(size);
		if (p[i] == NULL) { n = i; break; }
		volatile uintptr_t *w = p[i]; // volatile: the stores precede free and must not be elided
		for (size_t j = 0; j < size / sizeof(uintptr_t); j++) w[j] = word;
	}
	for (int i = n - 1; i >= 0; i--) free(p[i]);
}

static void *cheapMalloc(size_t size) { return malloc(size); }
static void *cheapCalloc(size_t n, size_t size) { return calloc(n, size); }
static void cheapFree(void *p) { free(p); }
*/
import "C"

import (
	"runtime"
	"runtime/debug"
	"sync"
	"unsafe"
)

// Poison mallocs n chunks of size bytes, fills every word with word and
// frees them (last first), so that the next mallocs of that size return
// chunks still holding word past the allocator's own bookkeeping.
func Poison(size, n int, word uintptr) {
	C.cheapPoison(C.size_t(size), C.int(n), C.uintptr_t(word))
}

// FreedGoAddresses returns the addresses of n objects of size bytes that the
// Go collector has since freed: words that look like Go heap pointers into
// spans that are no longer allocated.
func FreedGoAddresses(n, size int) []uintptr {
	out := make([]uintptr, n)
	for i := range out {
		b := make([]byte, size)
		out[i] = uintptr(unsafe.Pointer(&b[size/2]))
	}
	runtime.GC()
	runtime.GC()
	return out
}

// StoreLikeCu does what gorgonia.org/cu v0.9.4's Function.Launch does with
// its argument array: mallocs n pointer slots, stores a pointer into each
// as an unsafe.Pointer (a write with the write barrier), and frees them.
func StoreLikeCu(n int) {
	argv := C.cheapMalloc(C.size_t(n * 8))
	argp := C.cheapMalloc(C.size_t(n * 8))
	for i := 0; i < n; i++ {
		*(*unsafe.Pointer)(unsafe.Add(argp, 8*i)) = unsafe.Add(argv, 8*i)
	}
	C.cheapFree(argp)
	C.cheapFree(argv)
}

// StoreZeroed is StoreLikeCu over calloc'd (zeroed) slots, as infer/cudaep
// now allocates the arrays it stores pointers into.
func StoreZeroed(n int) {
	argv := C.cheapCalloc(C.size_t(n), 8)
	argp := C.cheapCalloc(C.size_t(n), 8)
	for i := 0; i < n; i++ {
		*(*unsafe.Pointer)(unsafe.Add(argp, 8*i)) = unsafe.Add(argv, 8*i)
	}
	C.cheapFree(argp)
	C.cheapFree(argv)
}

// Churn keeps the collector marking nearly all the time (GC percent 1, two
// goroutines allocating pointer-holding garbage), so that write barriers are
// on; the returned function stops it and restores the GC percent.
func Churn() (stop func()) {
	old := debug.SetGCPercent(1)
	done := make(chan struct{})
	var wg sync.WaitGroup
	for range 2 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			type node struct {
				next *node
				pad  [6]*int
			}
			var keep *node
			for i := 0; ; i++ {
				select {
				case <-done:
					return
				default:
				}
				keep = &node{next: keep}
				if i%1000 == 0 {
					keep = nil
				}
			}
		}()
	}
	return func() {
		close(done)
		wg.Wait()
		debug.SetGCPercent(old)
	}
}
