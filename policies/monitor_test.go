package policies

import (
	"math"
	"math/rand"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/internal/testfix"
	"github.com/admpo/admpo/models"
)

// refUADM recomputes U^ADM with the plain-Go ADM forward pass of the models
// package, one plan at a time, and a float64 two-pass variance.
func refUADM(t *testing.T, adm *models.ADM, obs, acts []float32) float64 {
	t.Helper()
	od, ad, m := adm.Cfg.ObsDim, adm.Cfg.ActDim, adm.Cfg.M
	l := len(obs) / od
	if l > m {
		obs, acts = obs[(l-m)*od:], acts[(l-m)*ad:]
		l = m
	}
	if l == 1 {
		return 0
	}
	preds := make([][]float64, l)
	for k := 1; k <= l; k++ {
		s := l - k
		start := obs[s*od : (s+1)*od]
		steps := make([][]float32, k)
		mean := make([][]float32, k)
		lv := make([][]float32, k)
		for j := range steps {
			steps[j] = acts[(s+j)*ad : (s+j+1)*ad]
			mean[j] = make([]float32, od+1)
			lv[j] = make([]float32, od+1)
		}
		if _, err := adm.PredictAll(nil, 1, start, steps, mean, lv); err != nil {
			t.Fatal(err)
		}
		preds[k-1] = make([]float64, od)
		for d := 0; d < od; d++ {
			preds[k-1][d] = float64(start[d]) + float64(mean[k-1][d])
		}
	}
	var total float64
	for d := 0; d < od; d++ {
		var mu float64
		for k := range preds {
			mu += preds[k][d]
		}
		mu /= float64(l)
		for k := range preds {
			total += (preds[k][d] - mu) * (preds[k][d] - mu) / float64(l)
		}
	}
	return math.Sqrt(total / float64(od))
}

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
			want := refUADM(t, f.adm, obs, acts)
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
