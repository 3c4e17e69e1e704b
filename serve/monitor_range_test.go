package serve

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/policies"
)

// uadmAnswer is the "uadm" object of a monitored /v1/act answer.
type uadmAnswer struct {
	U          float64
	K          int
	Percentile *float64
	OutOfRange *bool `json:"out_of_range"`
	Excess     float64
	Where      string
}

func postMonitored(t *testing.T, h *Handler, obs []float32, histObs, histAct [][]float32) uadmAnswer {
	t.Helper()
	body, _ := json.Marshal(map[string]any{"obs": obs, "history": map[string]any{"obs": histObs, "act": histAct}})
	rec := do(t, h, "POST", "/v1/act", "application/json", string(body))
	var r struct{ UADM *uadmAnswer }
	if rec.Code != 200 || json.Unmarshal(rec.Body.Bytes(), &r) != nil || r.UADM == nil {
		t.Fatalf("obs %v: %d %s", obs, rec.Code, rec.Body)
	}
	return *r.UADM
}

// TestMonitorOutOfRangeNeverFalls sweeps observation value 0 from the top
// of the calibrated range (testRange: [-1, 1]) to 1e30. U^ADM alone calls
// such inputs normal (the saturated predictions agree); the monitor's
// score must never fall: out of range from the first value above 1, with
// percentile 100 and an excess of (x - 1) / 2 (the range is 2 wide), and
// the excess grows with x. Values far out in all dimensions, and history
// observations and actions outside, are flagged too; the count reaches
// the metrics; a bundle without a recorded range says null.
func TestMonitorOutOfRangeNeverFalls(t *testing.T) {
	ortskip.IfMissing(t)
	h := New(newFixtureRange(t, 0).open(t, policies.Options{}), Options{})
	histObs := [][]float32{{0.5, -1, 0, 0.25, 2}}
	histAct := [][]float32{{0, -1, 1}}
	sweep := []float64{1, 1 + 1e-5, 1.001, 1.1, 1.5, 2, 3, 10, 100, 1e3, 1e4, 1e6, 1e8, 1e10, 1e15, 1e20, 1e25, 1e30}
	prevP, prevE := -1.0, -1.0
	oor := 0
	for _, x := range sweep {
		obs := []float32{float32(x), 0, 0, 0, 0}
		a := postMonitored(t, h, obs, histObs, histAct)
		if a.Percentile == nil || a.OutOfRange == nil {
			t.Fatalf("x=%g: no percentile or out_of_range: %+v", x, a)
		}
		p := *a.Percentile
		if p < prevP || a.Excess < prevE {
			t.Fatalf("x=%g: the score fell: percentile %v after %v, excess %v after %v", x, p, prevP, a.Excess, prevE)
		}
		prevP, prevE = p, a.Excess
		wantOut := float64(float32(x)) > 1+1e-6
		if *a.OutOfRange != wantOut {
			t.Fatalf("x=%g: out_of_range %v, want %v (%+v)", x, *a.OutOfRange, wantOut, a)
		}
		if !wantOut {
			if a.Excess != 0 || a.Where != "" {
				t.Fatalf("x=%g inside: excess %v, where %q", x, a.Excess, a.Where)
			}
			continue
		}
		oor++
		want := (float64(float32(x)) - 1) / 2
		if p != 100 || math.Abs(a.Excess-want) > 1e-9*want || a.Where != "observation value 0 at the current step" {
			t.Fatalf("x=%g: percentile %v, excess %v (want 100, %v), where %q", x, p, a.Excess, want, a.Where)
		}
	}
	// All values far out (the 1e30 in every dimension), and below the range.
	for _, v := range []float32{1e30, -1e30} {
		a := postMonitored(t, h, []float32{v, v, v, v, v}, histObs, histAct)
		oor++
		if !*a.OutOfRange || *a.Percentile != 100 || a.Excess < 1e29 {
			t.Fatalf("all %g: %+v, want out of range at percentile 100", v, a)
		}
	}
	// The case: observations of 1e30 in the history and now, where
	// U^ADM alone is 0 (percentile 0) because the saturated plans agree.
	huge := []float32{1e30, 1e30, 1e30, 1e30, 1e30}
	a := postMonitored(t, h, huge, [][]float32{huge}, [][]float32{{0, -1, 1}})
	oor++
	if !*a.OutOfRange || *a.Percentile != 100 {
		t.Fatalf("1e30 everywhere: %+v, want out of range at percentile 100", a)
	}
	// The history counts: an observation of its first step, an action of
	// its second (the action bounds are [-1, 1], [-2, 0.5], [0, 4]).
	for _, c := range []struct {
		hObs, hAct [][]float32
		where      string
		excess     float64
	}{
		{[][]float32{{0, 0, 0, 0, 7}, {0, 0, 0, 0, 0}}, [][]float32{{0, 0, 0}, {0, 0, 0}}, "observation value 4 at step 1 of the last 3", 1},
		{[][]float32{{0, 0, 0, 0, 0}, {0, 0, 0, 0, 0}}, [][]float32{{0, 0, 0}, {0, 3, 0}}, "action value 1 at step 2 of the last 3", 1},
		{[][]float32{{0, 0, 0, 0, 0}}, [][]float32{{0, 0, -1e30}}, "action value 2 at step 1 of the last 2", 2.5e29},
	} {
		a := postMonitored(t, h, []float32{0, 0, 0, 0, 0}, c.hObs, c.hAct)
		oor++
		if !*a.OutOfRange || *a.Percentile != 100 || a.Where != c.where || math.Abs(a.Excess-c.excess) > 1e-6*c.excess {
			t.Fatalf("history %v %v: %+v, want out of range at %q by %v", c.hObs, c.hAct, a, c.where, c.excess)
		}
	}
	// In range everywhere: not flagged, the percentile is U's.
	if a := postMonitored(t, h, []float32{0, 0, 0, 0, 0}, histObs, histAct); *a.OutOfRange || *a.Percentile == 100 {
		t.Fatalf("inside the range: %+v", a)
	}
	text := do(t, h, "GET", "/metrics", "", "").Body.String()
	if got := parseMetrics(t, text)["admpo_uadm_out_of_range_total"]; got != float64(oor) {
		t.Fatalf("admpo_uadm_out_of_range_total %v, want %d", got, oor)
	}
	// A bundle exported before ranges were recorded: null, not false.
	old := New(newFixture(t, true).open(t, policies.Options{}), Options{})
	rec := do(t, old, "POST", "/v1/act", "", fmt.Sprintf(`{"obs":[1e30,0,0,0,0],"history":{"obs":[[0,0,0,0,0]],"act":[[0,0,0]]}}`))
	if rec.Code != 200 || !strings.Contains(rec.Body.String(), `"out_of_range":null`) {
		t.Fatalf("bundle without a range: %d %s", rec.Code, rec.Body)
	}
}

// TestNonFiniteUADMOutOfRange: when U^ADM overflows for a history outside
// the calibrated range, the 422 says which value lies outside.
func TestNonFiniteUADMOutOfRange(t *testing.T) {
	ortskip.IfMissing(t)
	h := New(newFixtureRange(t, 1e-3).open(t, policies.Options{}), Options{})
	huge := `[3e38,-3e38,3e38,-3e38,3e38]`
	rec := do(t, h, "POST", "/v1/act", "", `{"obs":[0,0,0,0,0],"history":{"obs":[`+huge+`,`+huge+`],"act":[[1,0,2],[0,0,0]]}}`)
	var e struct{ Error string }
	if rec.Code != 422 || json.Unmarshal(rec.Body.Bytes(), &e) != nil ||
		!strings.Contains(e.Error, "non-finite") || !strings.Contains(e.Error, "observation value 0 at step 1 of the last 3 lies outside the calibrated range") {
		t.Fatalf("%d %s, want a 422 naming the value outside the range", rec.Code, rec.Body)
	}
}
