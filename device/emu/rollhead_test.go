package emu

import (
	"math"
	"math/rand"
	"testing"

	"github.com/admpo/admpo/device"
	"github.com/admpo/admpo/device/devicetest"
	"github.com/admpo/admpo/infer"
)

// TestRollDropoutKeepMatchesInfer: the keep flags roll_resblock applies,
// from roll_drop_base's states, are infer.DropoutKeep's bit for bit, for
// several seeds, roll-out steps, chunk rows and k, every block of 4 at
// hidden 200, p 0.1 and 0.5. The flags are read back exactly: with x 0,
// x·W + b = 10 (swish ≈ 10), γ 1 and β 0 a kept unit normalises above 0
// and a dropped one below. At p 0 (threshold 0) the masked launch equals
// the unmasked one bit for bit. devicetest.DropBase, the Suite's copy of
// infer's keying, is checked against the device's states too.
func TestRollDropoutKeepMatchesInfer(t *testing.T) {
	const hd, blocks, rows = 200, 4, 9
	d := New()
	defer d.Close()
	must := func(err error) {
		t.Helper()
		if err != nil {
			t.Fatal(err)
		}
	}
	up := func(x []float32) device.Buffer {
		b, err := d.Alloc(device.Float32, len(x))
		must(err)
		must(d.Upload(b, x))
		return b
	}
	upInt := func(x []int32) device.Buffer {
		b, err := d.Alloc(device.Int32, len(x))
		must(err)
		must(d.UploadInt32(b, x))
		return b
	}
	fill := func(n int, v float32) []float32 {
		x := make([]float32, n)
		for i := range x {
			x[i] = v
		}
		return x
	}
	ten, one, zero := up(fill(rows*hd, 10)), up(fill(hd, 1)), up(fill(hd, 0))
	for _, c := range []struct {
		seed       int64
		step, row0 int
		p          float64
	}{{0, 0, 0, 0.1}, {42, 3, 8192, 0.1}, {-5, 14, 32768 * 3, 0.5}, {math.MaxInt64, 1, 1 << 30, 0.1}, {7, 2, 100, 0}} {
		row := []int32{0, 1, 2, 5, 5, 5, 8, 3, 4}
		k := []int32{1, 2, 3, 1, 2, 5, 4, 1, 1}
		base, err := d.Alloc(device.Int32, 2*rows)
		must(err)
		must(d.Launch("roll_drop_base", rows, base, upInt(row), upInt(k), int32(uint32(c.seed)), int32(uint32(uint64(c.seed)>>32)),
			c.step, c.row0))
		bs := make([]int32, 2*rows)
		must(d.DownloadInt32(bs, base))
		for q := range rows {
			got := uint64(uint32(bs[2*q])) | uint64(uint32(bs[2*q+1]))<<32
			if want := devicetest.DropBase(c.seed, c.step, c.row0+int(row[q]), int(k[q])); got != want {
				t.Errorf("seed %d step %d row %d k %d: base %#x, devicetest.DropBase %#x", c.seed, c.step, c.row0+int(row[q]), k[q], got, want)
			}
		}
		thr := int32(devicetest.DropThreshold(c.p))
		scale := float32(1 / (1 - c.p))
		keep := make([]float32, blocks*hd)
		for blk := range blocks {
			x := up(make([]float32, rows*hd))
			must(d.Launch("roll_resblock", rows, x, ten, zero, one, zero, base, hd, rows, blk, thr, scale, float32(1e-5), 1))
			y := make([]float32, rows*hd)
			must(d.Download(y, x))
			if c.p == 0 {
				x0 := up(make([]float32, rows*hd))
				must(d.Launch("roll_resblock", rows, x0, ten, zero, one, zero, base, hd, rows, blk, thr, scale, float32(1e-5), 0))
				y0 := make([]float32, rows*hd)
				must(d.Download(y0, x0))
				for i := range y {
					if math.Float32bits(y[i]) != math.Float32bits(y0[i]) {
						t.Fatalf("p 0, block %d: masked y[%d] = %v, unmasked %v", blk, i, y[i], y0[i])
					}
				}
				continue
			}
			for q := range rows {
				infer.DropoutKeep(c.seed, c.step, c.row0+int(row[q]), int(k[q]), c.p, keep)
				bad := 0
				for u := range hd {
					if got, want := y[u*rows+q] > 0, keep[blk*hd+u] == 1; got != want {
						if bad++; bad <= 3 {
							t.Errorf("seed %d step %d row %d k %d p %g: block %d unit %d kept %v, infer.DropoutKeep %v",
								c.seed, c.step, c.row0+int(row[q]), k[q], c.p, blk, u, got, want)
						}
					}
				}
			}
		}
	}
}

// TestUADMCopyMatchesInfer: devicetest.UADM, roll_finish's reference in the
// Suite, is infer.UADM bit for bit.
func TestUADMCopyMatchesInfer(t *testing.T) {
	rng := rand.New(rand.NewSource(9))
	for range 200 {
		kn, od := 1+rng.Intn(5), 1+rng.Intn(17)
		preds := make([]float32, kn*od)
		for i := range preds {
			preds[i] = float32(rng.NormFloat64() * math.Pow(10, float64(rng.Intn(7)-3)))
		}
		if got, want := devicetest.UADM(preds, kn, od), infer.UADM(preds, kn, od); got != want {
			t.Fatalf("kn %d od %d: devicetest.UADM %v, infer.UADM %v", kn, od, got, want)
		}
	}
}
