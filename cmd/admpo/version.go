package main

import (
	"fmt"
	"runtime"
	"runtime/debug"
	"strings"
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
