package envs

import (
	"errors"
	"image"
	"math"
	"math/rand"
	"testing"
	"time"
)

// frameStats are a frame's number of distinct colours and the standard
// deviation of its grey levels.
func frameStats(img *image.RGBA) (colours int, std float64) {
	seen := map[[3]uint8]bool{}
	var s, s2 float64
	n := 0
	for i := 0; i < len(img.Pix); i += 4 {
		p := img.Pix[i : i+3]
		seen[[3]uint8{p[0], p[1], p[2]}] = true
		g := (float64(p[0]) + float64(p[1]) + float64(p[2])) / 3
		s += g
		s2 += g * g
		n++
	}
	m := s / float64(n)
	return len(seen), math.Sqrt(s2/float64(n) - m*m)
}

// meanAbsDiff is the mean absolute difference of two frames' channels.
func meanAbsDiff(a, b *image.RGBA) float64 {
	var d float64
	for i := range a.Pix {
		d += math.Abs(float64(a.Pix[i]) - float64(b.Pix[i]))
	}
	return d / float64(len(a.Pix))
}

// newRenderer makes a renderer, skipping the test when the machine has no
// EGL to render with.
func newRenderer(t *testing.T, e *Env, w, h int) *Renderer {
	t.Helper()
	r, err := e.NewRenderer(w, h)
	if errors.Is(err, ErrNoGL) {
		t.Skipf("no OpenGL: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(r.Close)
	return r
}

// TestRenderEveryTask renders frames of every task: each is not blank (many
// colours, spread grey levels), and frames after random actions differ from
// the first while a frame of an unchanged state is the same again.
func TestRenderEveryTask(t *testing.T) {
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			e := mustMake(t, name)
			e.Reset(1)
			r := newRenderer(t, e, 160, 120)
			first, err := r.Frame()
			if err != nil {
				t.Fatal(err)
			}
			if b := first.Bounds(); b.Dx() != 160 || b.Dy() != 120 {
				t.Fatalf("frame %v, want 160x120", b)
			}
			if c, s := frameStats(first); c < 10 || s < 5 {
				t.Errorf("first frame looks blank: %d colours, grey std %.2f", c, s)
			}
			again, _ := r.Frame()
			if d := meanAbsDiff(first, again); d != 0 {
				t.Errorf("two frames of one state differ by %.3f", d)
			}
			rng := rand.New(rand.NewSource(2))
			for i := 0; i < 3; i++ {
				for k := 0; k < 10; k++ {
					if st, err := e.Step(randomAction(e, rng)); err != nil || st.Terminated {
						e.Reset(int64(i))
						break
					}
				}
				f, err := r.Frame()
				if err != nil {
					t.Fatal(err)
				}
				if c, s := frameStats(f); c < 10 || s < 5 {
					t.Errorf("frame %d looks blank: %d colours, grey std %.2f", i+1, c, s)
				}
				if d := meanAbsDiff(first, f); d < 0.01 {
					t.Errorf("frame %d after 10 random steps differs from the first by only %.4f", i+1, d)
				}
				first = f
			}
		})
	}
}

// TestRenderSpeed logs frames per second (hopper, three sizes).
func TestRenderSpeed(t *testing.T) {
	e := mustMake(t, "hopper")
	e.Reset(0)
	for _, sz := range [][2]int{{160, 120}, {320, 240}, {640, 480}} {
		r := newRenderer(t, e, sz[0], sz[1])
		if _, err := r.Frame(); err != nil {
			t.Fatal(err)
		}
		start := time.Now()
		n := 0
		for time.Since(start) < time.Second {
			if _, err := r.Frame(); err != nil {
				t.Fatal(err)
			}
			n++
		}
		t.Logf("hopper %dx%d: %.1f frames/s (%d frames)", sz[0], sz[1], float64(n)/time.Since(start).Seconds(), n)
		r.Close()
	}
}
