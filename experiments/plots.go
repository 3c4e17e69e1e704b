package experiments

import (
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var palette = []color.RGBA{{214, 39, 40, 255}, {31, 119, 180, 255}, {44, 160, 44, 255}, {255, 127, 14, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}}

// decadeTicks labels every step-th power of ten (log axes spanning many
// decades, up to the float32 maximum).
type decadeTicks struct{ step int }

// Ticks returns one tick per decade in [lo, hi], every step-th labelled.
func (d decadeTicks) Ticks(lo, hi float64) []plot.Tick {
	a, b := int(math.Floor(math.Log10(lo))), int(math.Ceil(math.Log10(hi)))
	step := d.step
	if step <= 0 {
		step = max(1, (b-a)/8)
	}
	var t []plot.Tick
	for e := a; e <= b; e++ {
		v := math.Pow(10, float64(e))
		if v < lo || v > hi {
			continue
		}
		label := ""
		if (e-a)%step == 0 {
			label = "1e" + strconv.Itoa(e)
		}
		t = append(t, plot.Tick{Value: v, Label: label})
	}
	return t
}

// fineTicks are gonum's default ticks labelled with 4 significant digits
// (the default labels can repeat on narrow ranges).
type fineTicks struct{}

// Ticks returns gonum's default ticks with 4-digit labels.
func (fineTicks) Ticks(lo, hi float64) []plot.Tick {
	t := plot.DefaultTicks{}.Ticks(lo, hi)
	for i := range t {
		if t[i].Label != "" {
			t[i].Label = strconv.FormatFloat(t[i].Value, 'g', 4, 64)
		}
	}
	return t
}

// PlotCurves draws the mean open-loop MSE of every curve against the
// roll-out length on a log scale; overflowed values sit at the float32
// maximum (dashed line).
func PlotCurves(curves []Curve, title, out string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "roll-out length H"
	p.Y.Label.Text = "mean state MSE (log)"
	p.Y.Scale = plot.LogScale{}
	p.Y.Tick.Marker = decadeTicks{}
	p.Legend.Top, p.Legend.Left = true, true
	lo, hi := math.Inf(1), 0.0
	for i, c := range curves {
		xy := make(plotter.XYs, len(c.H))
		for j, h := range c.H {
			v := math.Max(c.MeanMSE[j], 1e-12)
			xy[j] = plotter.XY{X: float64(h), Y: v}
			lo, hi = math.Min(lo, v), math.Max(hi, v)
		}
		l, err := plotter.NewLine(xy)
		if err != nil {
			return fmt.Errorf("experiments: plot: %w", err)
		}
		l.Color = palette[i%len(palette)]
		l.Width = vg.Points(1.5)
		p.Add(l)
		p.Legend.Add(c.Name, l)
	}
	if hi >= MaxFloat32 {
		ref, err := plotter.NewLine(plotter.XYs{{X: 1, Y: MaxFloat32}, {X: float64(curves[0].H[len(curves[0].H)-1]), Y: MaxFloat32}})
		if err == nil {
			ref.Dashes = []vg.Length{vg.Points(3), vg.Points(3)}
			ref.Color = color.Gray{Y: 120}
			p.Add(ref)
			p.Legend.Add("float32 max (overflow)", ref)
		}
	}
	p.Y.Min, p.Y.Max = lo/2, hi*math.Pow(hi/lo*2, 0.4) // head room for the legend
	return save(p, 7, 4.5, out)
}

// ScatterSet is one policy's points in an uncertainty scatter plot.
type ScatterSet struct {
	Label string
	U     []float64 // model uncertainty
	Err   []float64 // true one-step error
}

// PlotScatters draws one panel per model (uncertainty on x, true one-step
// error on y, a colour per policy) side by side.
func PlotScatters(panels [][]ScatterSet, titles []string, out string) error {
	row := make([]*plot.Plot, len(panels))
	for i, sets := range panels {
		p := plot.New()
		p.Title.Text = titles[i]
		p.X.Label.Text = "model uncertainty"
		p.Y.Label.Text = "true one-step error (L2)"
		p.X.Tick.Marker, p.Y.Tick.Marker = fineTicks{}, fineTicks{}
		p.Legend.Top, p.Legend.Left = true, true
		for j, s := range sets {
			xy := make(plotter.XYs, 0, len(s.U))
			for k := range s.U {
				xy = append(xy, plotter.XY{X: s.U[k], Y: s.Err[k]})
			}
			if len(xy) == 0 {
				continue
			}
			sc, err := plotter.NewScatter(xy)
			if err != nil {
				return fmt.Errorf("experiments: plot: %w", err)
			}
			col := palette[(j+1)%len(palette)]
			sc.GlyphStyle = draw.GlyphStyle{Color: color.NRGBA{col.R, col.G, col.B, 110}, Radius: vg.Points(1.3), Shape: draw.CircleGlyph{}}
			p.Add(sc)
			p.Legend.Add(s.Label, sc)
		}
		row[i] = p
	}
	w, h := vg.Length(5.5*float64(len(panels)))*vg.Inch, 4.5*vg.Inch
	img := vgimg.New(w, h)
	dc := draw.New(img)
	canvases := plot.Align([][]*plot.Plot{row}, draw.Tiles{Rows: 1, Cols: len(row), PadX: vg.Millimeter * 4,
		PadTop: vg.Millimeter * 2, PadBottom: vg.Millimeter * 2, PadLeft: vg.Millimeter * 2, PadRight: vg.Millimeter * 2}, dc)
	for i, p := range row {
		p.Draw(canvases[0][i])
	}
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	f, err := os.Create(out)
	if err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("experiments: writing %s: %w", out, err)
	}
	return f.Close()
}

// PlotSweep draws the mean score against m with ±1 standard error bars.
func PlotSweep(ms []int, mean, se []float64, title, out string) error {
	p := plot.New()
	p.Title.Text = title
	p.X.Label.Text = "maximum backtracking length m"
	p.Y.Label.Text = "D4RL normalised score"
	pts := make(plotter.XYs, len(ms))
	errs := make(plotter.YErrors, len(ms))
	for i, m := range ms {
		pts[i] = plotter.XY{X: float64(m), Y: mean[i]}
		errs[i].Low, errs[i].High = se[i], se[i]
	}
	l, s, err := plotter.NewLinePoints(pts)
	if err != nil {
		return fmt.Errorf("experiments: plot: %w", err)
	}
	l.Color, s.Color = palette[0], palette[0]
	p.Add(l, s)
	eb, err := plotter.NewYErrorBars(struct {
		plotter.XYs
		plotter.YErrors
	}{pts, errs})
	if err != nil {
		return fmt.Errorf("experiments: plot: %w", err)
	}
	eb.Color = palette[0]
	p.Add(eb)
	p.X.Min, p.X.Max = float64(ms[0])-0.5, float64(ms[len(ms)-1])+0.5
	return save(p, 6, 4, out)
}

func save(p *plot.Plot, w, h float64, out string) error {
	if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
		return fmt.Errorf("experiments: %w", err)
	}
	if err := p.Save(vg.Length(w)*vg.Inch, vg.Length(h)*vg.Inch, out); err != nil {
		return fmt.Errorf("experiments: saving %s: %w", out, err)
	}
	return nil
}
