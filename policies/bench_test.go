package policies

import (
	"testing"
	"time"

	"github.com/admpo/admpo/internal/ortskip"
)

func TestSummarize(t *testing.T) {
	ds := make([]time.Duration, 100)
	for i := range ds {
		ds[len(ds)-1-i] = time.Duration(i+1) * time.Microsecond // 100..1 us
	}
	l := Summarize(ds)
	if l.N != 100 || l.P50 != 50*time.Microsecond || l.P99 != 99*time.Microsecond || l.Max != 100*time.Microsecond ||
		l.Mean != 50500*time.Nanosecond || l.P90 != 90*time.Microsecond {
		t.Fatalf("%+v", l)
	}
}

func TestBenchAct(t *testing.T) {
	ortskip.IfMissing(t)
	f := newFixture(t, 31, 4, 2, 2)
	for _, rt := range []string{RuntimeORT, RuntimeGo} {
		p := openTestPolicy(t, f, false, Options{Runtime: rt})
		l, err := BenchAct(p, 200, 1)
		if err != nil || l.N != 200 || l.P50 <= 0 || l.P99 < l.P50 || l.Max < l.P99 {
			t.Fatalf("%s: %v %v", rt, l, err)
		}
		t.Logf("%s: %v", rt, l)
	}
	if _, err := BenchAct(openTestPolicy(t, f, false, Options{}), 0, 1); err == nil {
		t.Fatal("n=0 accepted")
	}
}

// BenchmarkAct measures batch-1 Act latency of a Hopper-sized actor
// (11 -> 256x256 -> 3) on both runtimes:
//
//	go test -run XXX -bench Act -benchtime 20000x ./policies/
func BenchmarkAct(b *testing.B) {
	ortskip.IfMissing(b)
	f := newHopperFixture(b)
	for _, rt := range []string{RuntimeORT, RuntimeGo} {
		b.Run(rt, func(b *testing.B) {
			p := openTestPolicy(b, f, false, Options{Runtime: rt})
			l, err := BenchAct(p, b.N, 1)
			if err != nil {
				b.Fatal(err)
			}
			b.ReportMetric(float64(l.P50.Nanoseconds())/1e3, "p50-us")
			b.ReportMetric(float64(l.P99.Nanoseconds())/1e3, "p99-us")
		})
	}
}
