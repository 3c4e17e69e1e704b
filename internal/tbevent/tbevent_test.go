package tbevent

import (
	"math"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/admpo/admpo/internal/tbevent/tbcheck"
)

func checkScalars(t *testing.T, where string, got [][2]any, want []Scalar) {
	t.Helper()
	if len(got) != len(want) {
		t.Fatalf("%s: %d values, want %d", where, len(got), len(want))
	}
	for i, w := range want {
		tag, _ := got[i][0].(string)
		v, _ := got[i][1].(float64)
		if tag != w.Tag || float32(v) != w.Value {
			t.Errorf("%s value %d: %q=%v, want %q=%v", where, i, tag, v, w.Tag, w.Value)
		}
	}
}

func TestPythonReaderReadsWriter(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	steps := []int64{1, 500, 1 << 40}
	vals := [][]Scalar{
		{{"eval/return_mean", 123.5}, {"sac/alpha", 0.2}},
		{{"eval/return_mean", -7.25}, {"model/holdout_mse_k1", 1e-6}, {"x/very_long_tag_" + strings.Repeat("a", 200), 3}},
		{{"perf/steps_per_second", float32(math.Pi)}},
	}
	for i, s := range steps {
		if err := w.Scalars(s, vals[i]); err != nil {
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	files := tbcheck.Read(t, w.Path())
	evs := files[0]
	if len(evs) != 1+len(steps) {
		t.Fatalf("%d events, want %d", len(evs), 1+len(steps))
	}
	if evs[0].FileVersion != "brain.Event:2" || evs[0].Step != 0 || len(evs[0].Values) != 0 {
		t.Errorf("first event %+v, want file_version brain.Event:2 at step 0", evs[0])
	}
	for i, s := range steps {
		e := evs[i+1]
		if e.Step != s || e.FileVersion != "" {
			t.Errorf("event %d: step %d file_version %q, want step %d", i+1, e.Step, e.FileVersion, s)
		}
		if e.WallTime < evs[0].WallTime || e.WallTime > evs[0].WallTime+60 {
			t.Errorf("event %d: wall time %v, first %v", i+1, e.WallTime, evs[0].WallTime)
		}
		checkScalars(t, "event", e.Values, vals[i])
	}
}

func TestMaskedCRCKnownValues(t *testing.T) {
	// CRC-32C("123456789") = 0xE3069283; masked by hand:
	// rotr15 = 0x2507C60D, + 0xA282EAD8 = 0xC78AB0E5.
	if got := MaskedCRC([]byte("123456789")); got != 0xC78AB0E5 {
		t.Errorf("masked CRC %#x, want 0xC78AB0E5", got)
	}
}

func TestReadBackAndTrim(t *testing.T) {
	dir := t.TempDir()
	w, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	for s := int64(1); s <= 5; s++ {
		if err := w.Scalars(s*100, []Scalar{{"a", float32(s)}}); err != nil {
			t.Fatal(err)
		}
	}
	w.Close()
	// A killed writer leaves half a record behind.
	f, _ := os.OpenFile(w.Path(), os.O_APPEND|os.O_WRONLY, 0)
	f.Write([]byte{9, 0, 0, 0, 0, 0, 0, 0, 1})
	f.Close()
	evs, err := ReadFile(w.Path())
	if err != nil || len(evs) != 6 {
		t.Fatalf("read back %d events, %v; want 6", len(evs), err)
	}
	n, err := Trim(w.Path(), 300)
	if err != nil || n != 2 {
		t.Fatalf("trim dropped %d, %v; want 2", n, err)
	}
	files := tbcheck.Read(t, w.Path())
	var steps []int64
	for _, e := range files[0] {
		steps = append(steps, e.Step)
	}
	if len(steps) != 4 || steps[0] != 0 || steps[1] != 100 || steps[3] != 300 {
		t.Errorf("steps after trim %v, want [0 100 200 300]", steps)
	}
	if n, err := Trim(w.Path(), 300); err != nil || n != 0 {
		t.Errorf("second trim dropped %d, %v", n, err)
	}
}

func TestCorruptFileIsAnError(t *testing.T) {
	dir := t.TempDir()
	w, _ := Create(dir)
	w.Scalars(1, []Scalar{{"a", 1}})
	w.Close()
	b, _ := os.ReadFile(w.Path())
	b[len(b)-6] ^= 0xFF // a byte of the last record's data
	os.WriteFile(w.Path(), b, 0o644)
	if _, err := ReadFile(w.Path()); err == nil || !strings.Contains(err.Error(), "CRC") {
		t.Errorf("corrupt file: %v, want a CRC error", err)
	}
	if _, err := Trim(w.Path(), 0); err == nil {
		t.Error("trimming a corrupt file succeeded")
	}
}

func TestCreateGivesEachStartItsOwnFile(t *testing.T) {
	dir := t.TempDir()
	a, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	b, err := Create(dir)
	if err != nil {
		t.Fatal(err)
	}
	a.Close()
	b.Close()
	files, _ := Files(dir)
	if len(files) != 2 || files[0] != a.Path() || files[1] != b.Path() {
		t.Errorf("files %v, want [%s %s]", files, a.Path(), b.Path())
	}
}

// TestImportsNoTrainingCode keeps the writer free of training code.
func TestImportsNoTrainingCode(t *testing.T) {
	out, err := exec.Command("go", "list", "-deps", "github.com/admpo/admpo/internal/tbevent").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	for _, dep := range strings.Fields(string(out)) {
		if strings.HasPrefix(dep, "github.com/admpo/admpo/") && dep != "github.com/admpo/admpo/internal/tbevent" &&
			dep != "github.com/admpo/admpo/internal/atomicfile" {
			t.Errorf("tbevent depends on %s", dep)
		}
		if strings.HasPrefix(dep, "gorgonia.org/") {
			t.Errorf("tbevent depends on %s", dep)
		}
	}
}
