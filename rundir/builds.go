package rundir

import (
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"
)

// BuildsFile lists the admpo builds that ran a run, one line per start or
// resume (Dir.AppendBuild), so that a table can tell whether its runs come
// from one build.
const BuildsFile = "builds.txt"

// buildsHeader is the first line of builds.txt.
const buildsHeader = "# time\tstep\tbinary\tversion"

// Build is one start or resume of a run by one admpo build.
type Build struct {
	Time    time.Time
	Step    int    // the run's step (env step or update) it started from
	Binary  string // the executable's SHA-256, hex, as short as the writer chose
	Version string // `admpo version`'s line
}

// AppendBuild adds b as the last line of the run's builds.txt, creating
// the file with its header when there is none.
func (d Dir) AppendBuild(b Build) error {
	if strings.ContainsAny(b.Binary+b.Version, "\t\n") || b.Binary == "" {
		return fmt.Errorf("rundir: %s: a build needs a binary and no tabs or newlines (%q, %q)", BuildsFile, b.Binary, b.Version)
	}
	path := d.Path(BuildsFile)
	line := fmt.Sprintf("%s\t%d\t%s\t%s\n", b.Time.UTC().Format(time.RFC3339), b.Step, b.Binary, b.Version)
	if _, err := os.Stat(path); errors.Is(err, os.ErrNotExist) {
		line = buildsHeader + "\n" + line
	}
	f, err := os.OpenFile(path, os.O_WRONLY|os.O_CREATE|os.O_APPEND, 0o644)
	if err != nil {
		return fmt.Errorf("rundir: %w", err)
	}
	_, err = f.WriteString(line) // one write: a reader sees the line whole or not at all
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return fmt.Errorf("rundir: %s: %w", path, err)
	}
	return nil
}

// Builds reads the run's builds.txt in order; none (nil, nil) when the
// run has no such file (a run of a build before it, or not started).
func (d Dir) Builds() ([]Build, error) {
	path := d.Path(BuildsFile)
	raw, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("rundir: %w", err)
	}
	var out []Build
	for i, line := range strings.Split(strings.TrimRight(string(raw), "\n"), "\n") {
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		f := strings.Split(line, "\t")
		if len(f) != 4 {
			return nil, fmt.Errorf("rundir: %s line %d: %d tab-separated fields, want 4 (time, step, binary, version)", path, i+1, len(f))
		}
		at, err := time.Parse(time.RFC3339, f[0])
		if err != nil {
			return nil, fmt.Errorf("rundir: %s line %d: time: %w", path, i+1, err)
		}
		step, err := strconv.Atoi(f[1])
		if err != nil || step < 0 {
			return nil, fmt.Errorf("rundir: %s line %d: step %q is not a count", path, i+1, f[1])
		}
		if f[2] == "" {
			return nil, fmt.Errorf("rundir: %s line %d: no binary", path, i+1)
		}
		out = append(out, Build{Time: at, Step: step, Binary: f[2], Version: f[3]})
	}
	return out, nil
}
