package cpukern

import (
	"math"
	"math/rand"
	"testing"
)

// squash64 is the squashed-Gaussian head in float64 (package ops' former Go
// kernel): y [rows, act+1] and, given gy, the gradients dout [rows, 2·act].
func squash64(s Squash, rows int, out, eps, gy []float32) (y, dout []float64) {
	ad := len(s.Scale)
	half := 0.5 * (s.LogStdMax - s.LogStdMin)
	c := float64(ad) * (-0.5*math.Log(2*math.Pi) - 2*math.Ln2)
	y, dout = make([]float64, rows*(ad+1)), make([]float64, rows*2*ad)
	for r := 0; r < rows; r++ {
		lp := c
		gl := float64(gy[r*(ad+1)+ad])
		for j := 0; j < ad; j++ {
			u, t, e := float64(out[r*2*ad+j]), float64(out[r*2*ad+ad+j]), float64(eps[r*ad+j])
			tht := math.Tanh(t)
			logStd := s.LogStdMin + half*(tht+1)
			std := math.Exp(logStd)
			x := u + std*e
			ty := math.Tanh(x)
			z := -2 * x
			ez := math.Exp(-math.Abs(z))
			sp := max(z, 0) + math.Log1p(ez)
			sig := ez / (1 + ez) // σ(-2x)
			if z >= 0 {
				sig = 1 / (1 + ez)
			}
			y[r*(ad+1)+j] = ty*float64(s.Scale[j]) + float64(s.Bias[j])
			lp += -0.5*e*e - logStd + 2*x + 2*sp
			dx := float64(gy[r*(ad+1)+j])*float64(s.Scale[j])*(1-ty*ty) + gl*(2-4*sig)
			dout[r*2*ad+j] = dx
			dout[r*2*ad+ad+j] = (dx*std*e - gl) * half * (1 - tht*tht)
		}
		y[r*(ad+1)+ad] = lp
	}
	return y, dout
}

// TestSquashMatchesFloat64 compares the float32 kernel, forward and backward,
// on every path with the float64 formulas (relative and absolute tolerance
// of a few float32 roundings), checks the paths agree bit for bit, and checks
// the float64 backward against central differences of the float64 forward.
func TestSquashMatchesFloat64(t *testing.T) {
	s := Squash{LogStdMin: -5, LogStdMax: 2, Scale: []float32{1, 0.4, 2.5}, Bias: []float32{0, -0.1, 0.5}}
	ad, rows := len(s.Scale), 37
	rng := rand.New(rand.NewSource(3))
	out, eps, gy := randSlice(rng, rows*2*ad, 2), randSlice(rng, rows*ad, 1), randSlice(rng, rows*(ad+1), 1)
	// saturated and tiny arguments: tanh(x) = ±1 in float32, x near 0, large |t|
	out[0], out[1], out[ad] = 12, -1e-4, -30
	eps[0], eps[1] = 0.5, 1e-3
	out[2*ad], out[3*ad] = -9, 25
	wantY, wantD := squash64(s, rows, out, eps, gy)
	var first [][]float32
	forEachPath(t, func(t *testing.T) {
		y, st, d := make([]float32, rows*(ad+1)), make([]float32, SquashStateLen(rows, ad)), make([]float32, rows*2*ad)
		if err := SquashForward(s, rows, out, eps, y, st); err != nil {
			t.Fatal(err)
		}
		if err := SquashBackward(s, rows, eps, gy, st, d); err != nil {
			t.Fatal(err)
		}
		near := func(what string, got []float32, want []float64) {
			t.Helper()
			for i := range want {
				if diff := math.Abs(float64(got[i]) - want[i]); diff > 1e-5*math.Abs(want[i])+1e-5 || math.IsNaN(diff) {
					t.Fatalf("%s[%d] = %v, float64 %v", what, i, got[i], want[i])
				}
			}
		}
		near("y", y, wantY)
		near("dout", d, wantD)
		if first == nil {
			first = [][]float32{y, d}
			return
		}
		sameBits(t, "y", y, first[0])
		sameBits(t, "dout", d, first[1])
	})

	// The float64 backward is the gradient of Σ gy·y (central differences).
	loss := func(o []float32) float64 {
		y, _ := squash64(s, rows, o, eps, gy)
		v := 0.0
		for i := range y {
			v += float64(gy[i]) * y[i]
		}
		return v
	}
	for i := range out {
		if i == 0 || i == ad || i == 2*ad || i == 3*ad { // saturated: no useful difference in float32 inputs
			continue
		}
		o := append([]float32(nil), out...)
		h := float32(1e-3) * max(1, float32(math.Abs(float64(out[i]))))
		o[i] = out[i] + h
		hp := float64(o[i] - out[i])
		up := loss(o)
		o[i] = out[i] - h
		hm := float64(out[i] - o[i])
		fd := (up - loss(o)) / (hp + hm)
		if math.Abs(fd-wantD[i]) > 1e-3*math.Abs(wantD[i])+1e-4 {
			t.Fatalf("d out[%d]: backward %v, central difference %v", i, wantD[i], fd)
		}
	}
}

func TestSquashRejectsShortSlices(t *testing.T) {
	s := Squash{LogStdMin: -5, LogStdMax: 2, Scale: []float32{1, 1}, Bias: []float32{0, 0}}
	if err := SquashForward(s, 2, make([]float32, 7), make([]float32, 4), make([]float32, 6), make([]float32, 16)); err == nil {
		t.Fatal("SquashForward accepted an out of 7 values for 2 rows of 2 actions")
	}
	if err := SquashBackward(s, 2, make([]float32, 4), make([]float32, 6), make([]float32, 15), make([]float32, 8)); err == nil {
		t.Fatal("SquashBackward accepted a state of 15 values")
	}
	if err := SquashForward(Squash{Scale: []float32{1}}, 1, nil, nil, nil, nil); err == nil {
		t.Fatal("SquashForward accepted a bias of 0 values for 1 action")
	}
}
