package serve

import (
	"encoding/json"
	"errors"
	"math"
	"slices"
	"testing"
)

// FuzzDecodeRequest checks that the /v1/act decoder never panics, rejects
// with a 4xx *httpError, and that what it accepts is well-formed and
// survives a JSON round trip unchanged. `go test` runs the seeds only;
// `go test -fuzz FuzzDecodeRequest ./serve/` explores.
func FuzzDecodeRequest(f *testing.F) {
	for _, s := range []string{
		`{"obs":[1,2,3]}`,
		`{"obs":[[1,2,3],[4,5,6]],"deterministic":true}`,
		`{"obs":[0.5,-1e-3,3e38],"deterministic":false,"history":{"obs":[[1,2,3]],"act":[[1,2]]}}`,
		`{"obs":[1,2,3],"history":{"obs":[],"act":[]}}`,
		`{"obs":[[1,2,3]],"history":{"obs":[],"act":[]}}`,
		`{"obs":[1,2]}`, `{"obs":[[1,2,3],[1]]}`, `{"obs":[]}`, `{"obs":[[]]}`, `{"obs":null}`,
		`{"obs":[1,2,NaN]}`, `{"obs":[1,2,1e39]}`, `{"obs":"abc"}`, `{"obs":{}}`, `{"obs":[1,2,3]}x`,
		`{"obs":[1,2,3],"extra":0}`, `{"obs":[[[1]]]}`, `[`, ``, `null`, `{}`, `  {"obs" : [ [1,2,3] ] }  `,
		`{"obs":[1,2,3],"history":{"obs":[[1,2,3],[1,2,3]],"act":[[1,2]]}}`,
		`{"obs":[1,2,3],"history":{"obs":[[1,2,3]],"act":[[1,2,3]]}}`,
		`{"obs":[1,2,3],"history":null}`, `{"obs":[1,2,3],"deterministic":null}`,
	} {
		f.Add([]byte(s))
	}
	lim := limits{obsDim: 3, actDim: 2, maxBatch: 4, maxHistory: 3}
	f.Fuzz(func(t *testing.T, body []byte) {
		r, err := decodeRequest(body, lim)
		if err != nil {
			var he *httpError
			if !errors.As(err, &he) || he.status < 400 || he.status > 499 || he.msg == "" {
				t.Fatalf("error %v is not a 4xx httpError", err)
			}
			return
		}
		if r.n < 1 || r.n > lim.maxBatch || len(r.obs) != r.n*lim.obsDim || (!r.batch && r.n != 1) {
			t.Fatalf("accepted n=%d batch=%v with %d values", r.n, r.batch, len(r.obs))
		}
		hl := len(r.histObs) / lim.obsDim
		if r.history && (r.batch || len(r.histObs) != hl*lim.obsDim || len(r.histAct) != hl*lim.actDim || hl > lim.maxHistory) {
			t.Fatalf("accepted a bad history: batch=%v %d obs, %d act values", r.batch, len(r.histObs), len(r.histAct))
		}
		for _, v := range slices.Concat(r.obs, r.histObs, r.histAct) {
			if math.IsNaN(float64(v)) || math.IsInf(float64(v), 0) {
				t.Fatalf("accepted a non-finite value %v", v)
			}
		}
		// Re-encode what was understood and decode it again: same request.
		w := map[string]any{}
		if r.batch {
			rows := make([][]float32, r.n)
			for i := range rows {
				rows[i] = r.obs[i*lim.obsDim : (i+1)*lim.obsDim]
			}
			w["obs"] = rows
		} else {
			w["obs"] = r.obs
		}
		if r.deterministic != nil {
			w["deterministic"] = *r.deterministic
		}
		if r.history {
			ho, ha := make([][]float32, hl), make([][]float32, hl)
			for i := 0; i < hl; i++ {
				ho[i] = r.histObs[i*lim.obsDim : (i+1)*lim.obsDim]
				ha[i] = r.histAct[i*lim.actDim : (i+1)*lim.actDim]
			}
			w["history"] = map[string]any{"obs": ho, "act": ha}
		}
		b, err := json.Marshal(w)
		if err != nil {
			t.Fatal(err)
		}
		r2, err := decodeRequest(b, lim)
		if err != nil {
			t.Fatalf("re-encoded request %s refused: %v", b, err)
		}
		if !slices.Equal(r.obs, r2.obs) || r.batch != r2.batch || r.history != r2.history ||
			!slices.Equal(r.histObs, r2.histObs) || !slices.Equal(r.histAct, r2.histAct) ||
			(r.deterministic == nil) != (r2.deterministic == nil) {
			t.Fatalf("round trip changed the request: %s", b)
		}
	})
}
