package testfix

import (
	"math"
	"testing"

	"github.com/admpo/admpo/models"
)

// UADM recomputes the U^ADM of the history obs, acts (the last M steps of
// it) with the ADM's own plain-Go forward pass (models.ADM.PredictAll), one
// k-step plan at a time, and a float64 two-pass variance: the monitors'
// reference.
func UADM(t testing.TB, adm *models.ADM, obs, acts []float32) float64 {
	t.Helper()
	od, ad, m := adm.Cfg.ObsDim, adm.Cfg.ActDim, adm.Cfg.M
	l := len(obs) / od
	if l > m {
		obs, acts, l = obs[(l-m)*od:], acts[(l-m)*ad:], m
	}
	var preds [][]float64
	for k := 1; k <= l; k++ {
		s := l - k
		start := obs[s*od : (s+1)*od]
		steps, mean, lv := make([][]float32, k), make([][]float32, k), make([][]float32, k)
		for j := range steps {
			steps[j] = acts[(s+j)*ad : (s+j+1)*ad]
			mean[j], lv[j] = make([]float32, od+1), make([]float32, od+1)
		}
		if _, err := adm.PredictAll(nil, 1, start, steps, mean, lv); err != nil {
			t.Fatal(err)
		}
		p := make([]float64, od)
		for d := range p {
			p[d] = float64(start[d]) + float64(mean[k-1][d])
		}
		preds = append(preds, p)
	}
	var total float64
	for d := 0; d < od; d++ {
		var mu float64
		for _, p := range preds {
			mu += p[d] / float64(l)
		}
		for _, p := range preds {
			total += (p[d] - mu) * (p[d] - mu) / float64(l)
		}
	}
	return math.Sqrt(total / float64(od))
}
