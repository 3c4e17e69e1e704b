package rundir

import (
	"os"
	"strings"
	"testing"
	"time"
)

// TestBuilds: builds.txt as written is the documented text, line for
// line, and reads back; a run without one has none; bad lines are errors
// naming the line.
func TestBuilds(t *testing.T) {
	d := Dir(t.TempDir())
	if b, err := d.Builds(); b != nil || err != nil {
		t.Fatalf("no builds.txt: %v %v, want nothing", b, err)
	}
	at := time.Date(2026, 11, 29, 2, 30, 0, 0, time.FixedZone("CET", 3600))
	first := Build{Time: at, Step: 0, Binary: "0123456789abcdef", Version: "admpo 177733b go1.26.8 linux/amd64"}
	second := Build{Time: at.Add(time.Hour), Step: 4000, Binary: "fedcba9876543210", Version: "admpo (devel) go1.26.8 linux/amd64"}
	for _, b := range []Build{first, second} {
		if err := d.AppendBuild(b); err != nil {
			t.Fatal(err)
		}
	}
	raw, err := os.ReadFile(d.Path(BuildsFile))
	if err != nil {
		t.Fatal(err)
	}
	want := "# time\tstep\tbinary\tversion\n" +
		"2026-11-29T01:30:00Z\t0\t0123456789abcdef\tadmpo 177733b go1.26.8 linux/amd64\n" +
		"2026-11-29T02:30:00Z\t4000\tfedcba9876543210\tadmpo (devel) go1.26.8 linux/amd64\n"
	if string(raw) != want {
		t.Errorf("builds.txt:\n%s\nwant:\n%s", raw, want)
	}
	got, err := d.Builds()
	if err != nil || len(got) != 2 {
		t.Fatalf("Builds: %v %v", got, err)
	}
	for i, w := range []Build{first, second} {
		g := got[i]
		if !g.Time.Equal(w.Time) || g.Step != w.Step || g.Binary != w.Binary || g.Version != w.Version {
			t.Errorf("line %d: %+v, want %+v", i, g, w)
		}
	}

	if err := d.AppendBuild(Build{Time: at, Binary: "ab", Version: "two\tfields"}); err == nil {
		t.Error("a version with a tab was written")
	}
	if err := d.AppendBuild(Build{Time: at, Version: "v"}); err == nil {
		t.Error("a build without a binary was written")
	}
	for _, bad := range []string{
		"2026-11-29T01:30:00Z\t0\tab\n",               // 3 fields
		"yesterday\t0\tab\tv\n",                       // time
		"2026-11-29T01:30:00Z\t-1\tab\tv\n",           // step
		"2026-11-29T01:30:00Z\t0\t\tv\n",              // binary
		"# time\tstep\tbinary\tversion\nnot a line\n", // line 2
	} {
		os.WriteFile(d.Path(BuildsFile), []byte(bad), 0o644)
		_, err := d.Builds()
		if err == nil || !strings.Contains(err.Error(), "line") {
			t.Errorf("%q: %v, want an error naming the line", bad, err)
		}
	}
}
