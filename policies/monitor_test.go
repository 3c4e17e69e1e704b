package policies

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
)

func TestMonitorMatchesReference(t *testing.T) {
	ortskip.IfMissing(t)
	const od, ad, m = 5, 3, 4
	f := newFixture(t, 21, od, ad, m)
	for _, rt := range []string{RuntimeORT, RuntimeGo} {
		p := openTestPolicy(t, f, true, Options{Runtime: rt})
		mon, err := p.Monitor()
		if err != nil {
			t.Fatal(err)
		}
		if mon.M() != m {
			t.Fatalf("M=%d", mon.M())
		}
		rng := rand.New(rand.NewSource(3))
		for l := 1; l <= m+2; l++ {
			obs := testfix.RandNormal(rng, l*od)
			acts := testfix.RandNormal(rng, l*ad)
			r, err := mon.Uncertainty(obs, acts)
			if err != nil {
				t.Fatal(err)
			}
			want := testfix.UADM(t, f.adm, obs, acts)
			if math.Abs(r.U-want) > 1e-4*math.Max(1, want) {
				t.Fatalf("%s l=%d: U=%v, reference %v", rt, l, r.U, want)
			}
			if r.K != min(l, m) || !r.Calibrated {
				t.Fatalf("reading %+v", r)
			}
			if l > 1 && want < 1e-3 {
				t.Fatalf("l=%d: reference U %v is too small to test anything", l, want)
			}
			// Percentile from the fixture's table {50: 0.1, 95: 0.3, 99: 0.5},
			// written out by hand.
			var wp float64
			switch u := r.U; {
			case u < 0.1:
				wp = 50 * u / 0.1
			case u < 0.3:
				wp = 50 + 45*(u-0.1)/0.2
			case u < 0.5:
				wp = 95 + 4*(u-0.3)/0.2
			default:
				wp = 99
			}
			if math.Abs(r.Percentile-wp) > 1e-9 {
				t.Fatalf("percentile %v for U=%v, want %v", r.Percentile, r.U, wp)
			}
		}
		if _, err := mon.Uncertainty(testfix.RandNormal(rng, 2*od), testfix.RandNormal(rng, ad)); err == nil || !strings.Contains(err.Error(), "not l rows") {
			t.Fatalf("mismatched history: %v", err)
		}
		bad := testfix.RandNormal(rng, 2*od)
		bad[3] = float32(math.Inf(1))
		if _, err := mon.Uncertainty(bad, testfix.RandNormal(rng, 2*ad)); err == nil {
			t.Fatal("Inf history accepted")
		}
		p.Close()
		if _, err := mon.Uncertainty(testfix.RandNormal(rng, 2*od), testfix.RandNormal(rng, 2*ad)); err == nil {
			t.Fatal("monitor works after Close")
		}
	}
}
