package main

import (
	"fmt"
	"image"
	"image/color/palette"
	"image/draw"
	"image/gif"
	"io"
	"math"
	"path/filepath"
	"strings"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/internal/atomicfile"
)

// videoRecorder renders every stride-th state of one episode into GIF
// frames.
type videoRecorder struct {
	w, h    int
	fps     float64
	stride  int // 0 until the first call
	delay   int // per frame, in 1/100 s
	r       *envs.Renderer
	frames  []*image.Paletted
	episode int
}

// newVideoRecorder records episode 0 at about fps frames per second of the
// task's time.
func newVideoRecorder(w, h int, fps float64) *videoRecorder {
	return &videoRecorder{w: w, h: h, fps: fps}
}

// timing sets the stride (env steps per frame) and GIF delay for env steps
// of dt seconds.
func (v *videoRecorder) timing(dt float64) {
	v.stride = max(1, int(math.Round(1/(v.fps*dt))))
	v.delay = max(2, int(math.Round(100*float64(v.stride)*dt))) // viewers slow down delays under 2
}

// onStep is evaluate.Config.OnStep: it renders episode 0's reset and every
// stride-th step.
func (v *videoRecorder) onStep(ep int, e *envs.Env) error {
	if v.stride == 0 {
		v.timing(e.Dt())
	}
	if ep != v.episode || e.Steps()%v.stride != 0 {
		return nil
	}
	if v.r == nil {
		r, err := e.NewRenderer(v.w, v.h)
		if err != nil {
			return err
		}
		v.r = r
	}
	img, err := v.r.Frame()
	if err != nil {
		return err
	}
	p := image.NewPaletted(img.Bounds(), palette.Plan9)
	draw.Draw(p, p.Bounds(), img, image.Point{}, draw.Src)
	v.frames = append(v.frames, p)
	return nil
}

// close frees the renderer.
func (v *videoRecorder) close() {
	if v.r != nil {
		v.r.Close()
	}
}

// write writes the frames as an animated GIF at path (atomically).
func (v *videoRecorder) write(path string) error {
	if len(v.frames) == 0 {
		return fmt.Errorf("video: no frames recorded")
	}
	g := &gif.GIF{Image: v.frames, Delay: make([]int, len(v.frames)), LoopCount: 0}
	for i := range g.Delay {
		g.Delay[i] = v.delay
	}
	return atomicfile.Write(path, 0o644, func(w io.Writer) error { return gif.EncodeAll(w, g) })
}

// checkVideoPath refuses a --video path that is not a .gif file.
func checkVideoPath(path string) error {
	if !strings.EqualFold(filepath.Ext(path), ".gif") {
		return fmt.Errorf("%w: eval: --video %q: want a .gif file", errUsage, path)
	}
	return nil
}
