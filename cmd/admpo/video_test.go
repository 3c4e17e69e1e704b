package main

import (
	"encoding/json"
	"errors"
	"image/gif"
	"math/rand"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/evaluate"
)

// needGL skips the test when this machine cannot render.
func needGL(t *testing.T) {
	t.Helper()
	e, err := envs.Make("hopper")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	r, err := e.NewRenderer(32, 32)
	if errors.Is(err, envs.ErrNoGL) {
		t.Skipf("no OpenGL: %v", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	r.Close()
}

// TestVideoGIF records episode 0 of random hopper steps every stride-th
// step and reads the GIF back with image/gif: frame count, size, delay,
// frames that change; other episodes are not recorded.
func TestVideoGIF(t *testing.T) {
	needGL(t)
	e, err := envs.Make("hopper")
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	v := newVideoRecorder(96, 64, 25) // hopper's dt 0.008 s: one frame per 5 steps, 4/100 s each
	defer v.close()
	e.Reset(3)
	if err := v.onStep(0, e); err != nil {
		t.Fatal(err)
	}
	rng := rand.New(rand.NewSource(1))
	for i := 0; i < 23; i++ {
		act := make([]float64, 3)
		for j := range act {
			act[j] = 0.3 * (rng.Float64()*2 - 1)
		}
		if _, err := e.Step(act); err != nil {
			t.Fatal(err)
		}
		if err := v.onStep(0, e); err != nil {
			t.Fatal(err)
		}
		if err := v.onStep(1, e); err != nil { // another episode: ignored
			t.Fatal(err)
		}
	}
	path := filepath.Join(t.TempDir(), "v.gif")
	if err := v.write(path); err != nil {
		t.Fatal(err)
	}
	g := readGIF(t, path)
	if len(g.Image) != 5 || !slices.Equal(g.Delay, []int{4, 4, 4, 4, 4}) { // steps 0, 5, 10, 15, 20
		t.Fatalf("%d frames, delays %v: want 5 frames of 4/100 s", len(g.Image), g.Delay)
	}
	for i, im := range g.Image {
		if b := im.Bounds(); b.Dx() != 96 || b.Dy() != 64 {
			t.Fatalf("frame %d is %v", i, b)
		}
		if i > 0 && slices.Equal(im.Pix, g.Image[i-1].Pix) {
			t.Errorf("frame %d equals frame %d", i, i-1)
		}
	}
	if err := checkVideoPath("x.mp4"); !errors.Is(err, errUsage) {
		t.Errorf("--video x.mp4: %v", err)
	}
}

// TestEvalVideo: admpo eval --video writes a GIF of the first episode
// without changing the episodes' results.
func TestEvalVideo(t *testing.T) {
	needGL(t)
	bin := buildBinary(t)
	bundle := testBundle(t)
	var plain, with evaluate.Result
	r := runBin(t, bin, nil, "eval", "--bundle", bundle, "--episodes", "2", "--runtime", "go", "--json")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &plain) != nil {
		t.Fatalf("eval: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	out := filepath.Join(t.TempDir(), "ep.gif")
	r = runBin(t, bin, nil, "eval", "--bundle", bundle, "--episodes", "2", "--runtime", "go", "--json", "--video", out,
		"--video-width", "64", "--video-height", "48", "--video-fps", "125")
	if r.code != 0 || json.Unmarshal([]byte(r.stdout), &with) != nil {
		t.Fatalf("eval --video: exit %d %q %q", r.code, r.stdout, r.stderr)
	}
	if !slices.Equal(plain.Returns, with.Returns) || !slices.Equal(plain.Lengths, with.Lengths) {
		t.Errorf("--video changed the episodes: %v %v, want %v %v", with.Returns, with.Lengths, plain.Returns, plain.Lengths)
	}
	g := readGIF(t, out)
	// 125 frames/s of hopper's 0.008 s steps: every step, the reset included.
	if len(g.Image) != plain.Lengths[0]+1 || g.Image[0].Bounds().Dx() != 64 || g.Image[0].Bounds().Dy() != 48 {
		t.Errorf("%d frames of %v, want %d of 64x48", len(g.Image), g.Image[0].Bounds(), plain.Lengths[0]+1)
	}
	if r := runBin(t, bin, nil, "eval", "--bundle", bundle, "--video", "x.mp4"); r.code != 2 {
		t.Errorf("--video x.mp4: exit %d", r.code)
	}
	// Without EGL: an error naming the library and the Debian packages, no file.
	none := filepath.Join(t.TempDir(), "none.gif")
	r = runBin(t, bin, []string{"ADMPO_EGL_LIB=/nonexistent/libEGL.so.1"}, "eval", "--bundle", bundle, "--episodes", "1", "--video", none)
	if r.code != 1 || !strings.Contains(r.stderr, "/nonexistent/libEGL.so.1") || !strings.Contains(r.stderr, "libegl-mesa0") {
		t.Errorf("without EGL: exit %d %q", r.code, r.stderr)
	}
	if _, err := os.Stat(none); err == nil {
		t.Errorf("without EGL a GIF was written")
	}
}

// readGIF decodes the GIF file at path.
func readGIF(t *testing.T, path string) *gif.GIF {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	g, err := gif.DecodeAll(f)
	if err != nil {
		t.Fatal(err)
	}
	return g
}
