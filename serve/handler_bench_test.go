package serve

import (
	"bytes"
	"math/rand"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/admpo/admpo/internal/ortskip"
	"github.com/admpo/admpo/models"
	"github.com/admpo/admpo/onnx"
	"github.com/admpo/admpo/policies"
)

// BenchmarkActHandler times one POST /v1/act through Handler.ServeHTTP
// (routing, metrics, body read, JSON decoding, the act call, the answer)
// without the network, for a Hopper-sized actor (11 -> 256x256 -> 3) on
// each runtime. It uses only API that predates the hot-reload work, so the
// same file runs against older commits for a side-by-side comparison
// (docs/benchmarks.md):
//
//	go test -run XXX -bench ActHandler -benchmem -count 5 ./serve/
func BenchmarkActHandler(b *testing.B) {
	dir := hopperBundle(b)
	body := []byte(`{"obs":[0.0125,-0.031,0.0042,0.0187,-0.0263,0.117,-0.289,0.402,-0.154,0.0981,-0.0447]}`)
	for _, rt := range []string{"go", "ort"} {
		b.Run(rt, func(b *testing.B) {
			if rt == "ort" {
				ortskip.IfMissing(b)
			}
			p, err := policies.Open(dir, policies.Options{Runtime: rt})
			if err != nil {
				b.Fatal(err)
			}
			defer p.Close()
			h := New(p, Options{})
			rd := bytes.NewReader(body)
			req := httptest.NewRequest(http.MethodPost, "/v1/act", rd)
			req.Header.Set("Content-Type", "application/json")
			b.ReportAllocs()
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				rd.Reset(body)
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				if w.Code != http.StatusOK {
					b.Fatalf("status %d: %s", w.Code, w.Body)
				}
			}
		})
	}
}

// hopperBundle writes a bundle of a random Hopper-sized actor
// (11 -> 256x256 -> 3, actions in [-1, 1]) and returns its directory.
func hopperBundle(b *testing.B) string {
	b.Helper()
	rng := rand.New(rand.NewSource(1))
	low, high := []float64{-1, -1, -1}, []float64{1, 1, 1}
	pol, err := onnx.ExportActor(models.NewActor(11, low, high, []int{256, 256}, rng), nil)
	if err != nil {
		b.Fatal(err)
	}
	dir := b.TempDir() + "/b"
	if err := policies.WriteBundle(dir, policies.Bundle{Policy: pol,
		Manifest: policies.Manifest{Task: "hopper", ActLow: low, ActHigh: high}}); err != nil {
		b.Fatal(err)
	}
	return dir
}
