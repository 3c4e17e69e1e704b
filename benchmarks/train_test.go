package benchmarks

import "testing"

func TestPeakHigherTakesEachLibrarysHigher(t *testing.T) {
	a := PeakProduct{N: 256, CPUKern: 120, OpenBLAS: 110}
	b := PeakProduct{N: 256, CPUKern: 140, OpenBLAS: 100}
	h := a.Higher(b)
	if h.CPUKern != 140 || h.OpenBLAS != 110 || h.N != 256 {
		t.Fatalf("Higher = %+v, want cpukern 140, OpenBLAS 110, n 256", h)
	}
	if h.Best() != 140 {
		t.Fatalf("Best = %v, want 140", h.Best())
	}
}
