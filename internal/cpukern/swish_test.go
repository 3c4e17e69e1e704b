package cpukern

import (
	"math"
	"math/rand"
	"testing"
)

// expGo is package ops' former float32 e^x (actExp32), the reference the
// C kernels must equal bit for bit.
func expGo(x float32) float32 {
	if !(x > -87.3 && x < 88) {
		if x <= -87.3 {
			return 0
		}
		return float32(math.Exp(float64(x)))
	}
	const magic = 12582912
	n := x*1.44269504088896341 + magic
	n -= magic
	r := x - n*0.693359375 - n*(-2.12194440e-4)
	p := 1 + r*(1+r*(0.5+r*(1.0/6+r*(1.0/24+r*(1.0/120+r*(1.0/720+r*(1.0/5040)))))))
	return p * math.Float32frombits(uint32(int32(n)+127)<<23)
}

func sigmoidGo(x float32) float32 { return 1 / (1 + expGo(-x)) }

// swishInputs are random values at several scales and the edges of the
// polynomial's range (±87.3, ±88 and their neighbours), ±Inf, NaN, ±0 and
// subnormals, spread over n values.
func swishInputs(rng *rand.Rand, n int) []float32 {
	edges := []float32{87.3, -87.3, 88, -88, 88.5, -88.5, 100, -100, 87.29999, -87.29999, 87.30001, -87.30001,
		87.99999, -87.99999, float32(math.Inf(1)), float32(math.Inf(-1)), float32(math.NaN()), 0,
		float32(math.Copysign(0, -1)), 1e-40, -1e-40, 20, -20}
	x := make([]float32, n)
	for i := range x {
		switch i % 4 {
		case 0:
			x[i] = edges[rng.Intn(len(edges))]
		case 1:
			x[i] = float32(rng.NormFloat64())
		case 2:
			x[i] = float32(10 * rng.NormFloat64())
		default:
			x[i] = float32(40 * rng.NormFloat64())
		}
	}
	return x
}

// sameBitsNaN is sameBits with any NaN equal to any NaN (a NaN's sign and
// payload depend on the order of a product's operands, which C compilers
// may swap).
func sameBitsNaN(t *testing.T, what string, got, want []float32) {
	t.Helper()
	g, w := append([]float32(nil), got...), append([]float32(nil), want...)
	for i := range g {
		if i < len(w) && g[i] != g[i] && w[i] != w[i] {
			g[i], w[i] = 0, 0
		}
	}
	sameBits(t, what, g, w)
}

// TestSwishMatchesGo: every path gives package ops' former Go float32
// swish, forward and backward (set and accumulate), bit for bit, on random
// values and the range edges (NaNs of any sign and payload count alike);
// and stays within 2e-6 of float64 swish.
func TestSwishMatchesGo(t *testing.T) {
	forEachPath(t, func(t *testing.T) {
		rng := rand.New(rand.NewSource(11))
		for _, n := range append(lengths, 1000) {
			x, g := swishInputs(rng, n), randSlice(rng, n, 1)
			y := make([]float32, n)
			SwishForward(x, y)
			want := make([]float32, n)
			for i, v := range x {
				want[i] = v * sigmoidGo(v)
			}
			sameBitsNaN(t, "swish", y, want)
			d0 := randSlice(rng, n, 1)
			for _, acc := range []bool{false, true} {
				d := append([]float32(nil), d0...)
				SwishBackward(x, g, d, acc)
				wd := append([]float32(nil), d0...)
				for i, v := range x {
					s := sigmoidGo(v)
					if acc {
						wd[i] += g[i] * s * (1 + v*(1-s))
					} else {
						wd[i] = g[i] * s * (1 + v*(1-s))
					}
				}
				sameBitsNaN(t, "swish backward", d, wd)
			}
			for i, v := range x {
				if math.IsNaN(float64(v)) || math.Abs(float64(v)) > 80 {
					continue
				}
				x64 := float64(v)
				s64 := 1 / (1 + math.Exp(-x64))
				if e := math.Abs(float64(y[i]) - x64*s64); e > 2e-6*math.Abs(x64*s64)+1e-30 {
					t.Fatalf("swish(%g) = %g, float64 %g", v, y[i], x64*s64)
				}
			}
		}
	})
}

// TestSwishExpAccuracy: the exp that the swish kernels equal bit for bit
// (expGo) is within 5e-7 of math.Exp over its polynomial range, 0 below
// -87.3 and +Inf above float32's range.
func TestSwishExpAccuracy(t *testing.T) {
	worst := 0.0
	for x := -87.0; x <= 88.5; x += 0.00731 {
		got := float64(expGo(float32(x)))
		want := math.Exp(float64(float32(x)))
		if e := math.Abs(got-want) / want; e > worst {
			worst = e
		}
	}
	if worst > 5e-7 {
		t.Fatalf("worst relative error %g > 5e-7", worst)
	}
	if expGo(-100) != 0 || !math.IsInf(float64(expGo(100)), 1) {
		t.Fatalf("exp(-100) = %v, exp(100) = %v", expGo(-100), expGo(100))
	}
}
