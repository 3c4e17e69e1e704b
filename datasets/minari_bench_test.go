package datasets

import (
	"fmt"
	"math/rand"
	"path/filepath"
	"syscall"
	"testing"
	"time"
)

// cpuSeconds is the process's user + system CPU time.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkMinariRead times reading a 1M-transition hopper-sized data set
// (obs 11, actions 3) from a Minari directory and, side by side, from a
// D4RL file holding the same transitions; episodes of 1000 steps (1,000
// groups) and of 200 steps (5,000 groups, like medium-replay's short
// episodes). It prints wall and CPU time (user + system, of the process;
// the machine's load inflates the wall times).
//
//	go test -run XXX -bench MinariRead -benchtime 3x ./datasets/
func BenchmarkMinariRead(b *testing.B) {
	for _, epLen := range []int{1000, 200} {
		b.Run(fmt.Sprintf("episodes-of-%d", epLen), func(b *testing.B) {
			const n, od, ad = 1000000, 11, 3
			d := &Dataset{N: n, ObsDim: od, ActDim: ad, Obs: make([]float32, n*od), NextObs: make([]float32, n*od),
				Act: make([]float32, n*ad), Rew: make([]float32, n), Terminal: make([]bool, n), Timeout: make([]bool, n),
				Meta: map[string]string{"env": "hopper", "kind": "medium"}}
			rng := rand.New(rand.NewSource(1))
			for i := range d.Obs {
				d.Obs[i] = float32(rng.NormFloat64())
			}
			for i := 0; i < n; i++ {
				if (i+1)%epLen == 0 {
					d.Timeout[i] = true
				} else {
					copy(d.NextObs[i*od:(i+1)*od], d.Obs[(i+1)*od:(i+2)*od])
				}
			}
			for i := range d.Act {
				d.Act[i] = float32(rng.Float64()*2 - 1)
			}
			tmp := b.TempDir()
			mdir, file := filepath.Join(tmp, "hopper-medium-v0"), filepath.Join(tmp, "hopper-medium.hdf5")
			if err := WriteMinari(mdir, d, MinariSpec{}); err != nil {
				b.Fatal(err)
			}
			if err := WriteD4RL(file, d); err != nil {
				b.Fatal(err)
			}
			b.ResetTimer()
			var tm, td time.Duration
			var cm, cd float64
			for i := 0; i < b.N; i++ {
				t0, c0 := time.Now(), cpuSeconds()
				if _, err := ReadMinari(mdir); err != nil {
					b.Fatal(err)
				}
				t1, c1 := time.Now(), cpuSeconds()
				if _, err := ReadD4RL(file); err != nil {
					b.Fatal(err)
				}
				tm, td = tm+t1.Sub(t0), td+time.Since(t1)
				cm, cd = cm+c1-c0, cd+cpuSeconds()-c1
			}
			ms, ds := tm.Seconds()/float64(b.N), td.Seconds()/float64(b.N)
			b.ReportMetric(ms, "s/minari-read")
			b.ReportMetric(ds, "s/d4rl-read")
			b.ReportMetric(float64(n)/ms, "transitions/s")
			fmt.Printf("1M transitions in %d episodes: Minari %.3f s wall, %.3f s CPU (%.2f M transitions/s) | D4RL file %.3f s wall, %.3f s CPU | ratio %.2fx wall, %.2fx CPU\n",
				n/epLen, ms, cm/float64(b.N), float64(n)/ms/1e6, ds, cd/float64(b.N), ms/ds, cm/cd)
		})
	}
}
