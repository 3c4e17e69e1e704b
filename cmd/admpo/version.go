package main

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strings"
	"sync"
	"time"

	"github.com/admpo/admpo/rundir"
)

// version is set at link time (-ldflags "-X main.version=v1.2.3"); when
// empty the module version from the build information is used.
var version = ""

func runVersion(args []string) error {
	fs := newFlags("version")
	if err := parse(fs, args); err != nil {
		return err
	}
	fmt.Println(versionString())
	return nil
}

// versionString is one line: admpo VERSION (commit REV[, modified][, TIME]) GO OS/ARCH.
func versionString() string {
	v, rev, when, modified := version, "", "", false
	if bi, ok := debug.ReadBuildInfo(); ok {
		if v == "" {
			v = bi.Main.Version
		}
		for _, s := range bi.Settings {
			switch s.Key {
			case "vcs.revision":
				rev = s.Value
			case "vcs.time":
				when = s.Value
			case "vcs.modified":
				modified = s.Value == "true"
			}
		}
	}
	if v == "" {
		v = "(devel)"
	}
	var parts []string
	if rev != "" {
		parts = append(parts, "commit "+rev)
		if modified {
			parts = append(parts, "modified")
		}
		if when != "" {
			parts = append(parts, when)
		}
	}
	s := "admpo " + v
	if len(parts) > 0 {
		s += " (" + strings.Join(parts, ", ") + ")"
	}
	return fmt.Sprintf("%s %s %s/%s", s, runtime.Version(), runtime.GOOS, runtime.GOARCH)
}

// binaryDigest is the first 16 hex digits of this executable's SHA-256
// ("unknown" when it cannot be read): what tells two builds apart when
// their version lines agree (a (devel) build, a modified tree).
var binaryDigest = sync.OnceValue(func() string {
	path, err := os.Executable()
	if err != nil {
		return "unknown"
	}
	f, err := os.Open(path)
	if err != nil {
		return "unknown"
	}
	defer f.Close()
	h := sha256.New()
	if _, err := io.Copy(h, f); err != nil {
		return "unknown"
	}
	return hex.EncodeToString(h.Sum(nil))[:16]
})

// noteBuild records in the run's builds.txt that this build runs it from
// step on, and warns on w when the run's last recorded build was another
// binary: its results then mix builds, which a one-build table must not.
func noteBuild(dir string, step int, w io.Writer) error {
	d := rundir.Dir(dir)
	b := rundir.Build{Time: time.Now(), Step: step, Binary: binaryDigest(), Version: versionString()}
	prev, err := d.Builds()
	if err != nil {
		fmt.Fprintf(w, "warning: %v (the new line is appended all the same)\n", err)
	}
	if n := len(prev); n > 0 && prev[n-1].Binary != b.Binary {
		p := prev[n-1]
		fmt.Fprintf(w, "warning: %s ran from step %d on another admpo binary (%s: %s); this one is %s (%s): "+
			"its results from step %d on come from another build, so keep the run out of a one-build comparison\n",
			dir, p.Step, p.Binary, p.Version, b.Binary, b.Version, step)
	}
	return d.AppendBuild(b)
}
