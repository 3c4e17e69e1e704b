package ops

import (
	"testing"

	G "gorgonia.org/gorgonia"
	"gorgonia.org/tensor"
)

// TestConcatColumns checks [a b] element by element and that the gradient
// of Σ c ⊙ [a b] with respect to a and b are c's left and right columns.
func TestConcatColumns(t *testing.T) {
	const rows, p, q = 3, 2, 4
	g := G.NewGraph()
	mat := func(name string, cols int, f func(r, j int) float32) (*G.Node, []float32) {
		v := make([]float32, rows*cols)
		for r := 0; r < rows; r++ {
			for j := 0; j < cols; j++ {
				v[r*cols+j] = f(r, j)
			}
		}
		return G.NewMatrix(g, G.Float32, G.WithShape(rows, cols), G.WithName(name),
			G.WithValue(tensor.New(tensor.WithShape(rows, cols), tensor.WithBacking(v)))), v
	}
	a, _ := mat("a", p, func(r, j int) float32 { return float32(10*r + j) })
	b, _ := mat("b", q, func(r, j int) float32 { return float32(100 + 10*r + j) })
	c, cv := mat("c", p+q, func(r, j int) float32 { return float32(r*(p+q)+j) * 0.5 })
	y, err := ConcatColumns(a, b)
	if err != nil {
		t.Fatal(err)
	}
	prod, err := G.HadamardProd(y, c)
	if err != nil {
		t.Fatal(err)
	}
	cost, err := G.Sum(prod)
	if err != nil {
		t.Fatal(err)
	}
	grads, err := G.Grad(cost, a, b)
	if err != nil {
		t.Fatal(err)
	}
	m := G.NewTapeMachine(g)
	defer m.Close()
	if err := m.RunAll(); err != nil {
		t.Fatal(err)
	}
	ys := y.Value().Data().([]float32)
	da, db := grads[0].Value().Data().([]float32), grads[1].Value().Data().([]float32)
	for r := 0; r < rows; r++ {
		for j := 0; j < p+q; j++ {
			want, grad, wantGrad := float32(10*r+j), float32(0), cv[r*(p+q)+j]
			if j < p {
				grad = da[r*p+j]
			} else {
				want, grad = float32(100+10*r+j-p), db[r*q+j-p]
			}
			if ys[r*(p+q)+j] != want || grad != wantGrad {
				t.Fatalf("[%d,%d]: y %v grad %v, want %v %v", r, j, ys[r*(p+q)+j], grad, want, wantGrad)
			}
		}
	}
	if _, err := ConcatColumns(a, G.NewMatrix(g, G.Float32, G.WithShape(rows+1, 2), G.WithName("bad"))); err == nil {
		t.Fatal("ConcatColumns accepted matrices with different rows")
	}
}
