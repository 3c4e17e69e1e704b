package main

import (
	"bufio"
	"fmt"
	"os"
	"runtime"
	"sort"
	"strconv"
	"strings"

	"github.com/spf13/pflag"

	"github.com/admpo/admpo/train"
)

// machineMemory returns the memory a run may use, in bytes, and what
// bounds it: the smallest of /proc/meminfo's MemTotal and the cgroup's
// limit (v2 memory.max, v1 memory.limit_in_bytes); 0 when none is known.
// A test replaces it.
var machineMemory = func() (int64, string) {
	var best int64
	what := ""
	consider := func(n int64, w string) {
		if n > 0 && (best == 0 || n < best) {
			best, what = n, w
		}
	}
	if f, err := os.Open("/proc/meminfo"); err == nil {
		sc := bufio.NewScanner(f)
		for sc.Scan() {
			if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
				kb, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(rest), "kB")), 10, 64)
				if err == nil {
					consider(kb<<10, "this machine's memory")
				}
			}
		}
		f.Close()
	}
	for _, p := range []string{"/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes"} {
		if b, err := os.ReadFile(p); err == nil {
			if n, err := strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64); err == nil && n < 1<<60 {
				consider(n, "the cgroup's memory limit ("+p+")")
			}
		}
	}
	return best, what
}

// gib formats bytes in GiB.
func gib(b float64) string { return strconv.FormatFloat(b/(1<<30), 'f', 1, 64) + " GiB" }

// checkResources refuses, as a usage error, a run whose memory estimate
// (train's MemoryParts, a lower bound) exceeds the memory it may use,
// naming the estimate and the flags that size its largest part (those of
// them given, when any is), and thread counts above the CPUs.
func checkResources(fs *pflag.FlagSet, parts []train.MemoryPart, threads, blasThreads int) error {
	cpus := runtime.NumCPU()
	for _, t := range []struct {
		flag string
		n    int
	}{{"threads", threads}, {"blas-threads", blasThreads}} {
		if t.n > cpus {
			return fmt.Errorf("%w: --%s %d is more than the %d CPUs of this machine", errUsage, t.flag, t.n, cpus)
		}
	}
	limit, what := machineMemory()
	total := 0.0
	for _, p := range parts {
		total += p.Bytes
	}
	if limit <= 0 || total <= float64(limit) {
		return nil
	}
	sorted := append([]train.MemoryPart(nil), parts...)
	sort.SliceStable(sorted, func(i, j int) bool { return sorted[i].Bytes > sorted[j].Bytes })
	var flags, given []string
	for _, f := range sorted[0].Flags {
		flags = append(flags, "--"+f)
		if fs.Changed(f) {
			given = append(given, "--"+f)
		}
	}
	if len(given) > 0 {
		flags = given
	}
	var detail []string
	for _, p := range sorted[:min(3, len(sorted))] {
		detail = append(detail, p.Name+" "+gib(p.Bytes))
	}
	return fmt.Errorf("%w: %s: the run needs at least %s of memory (%s), more than the %s of %s",
		errUsage, strings.Join(flags, ", "), gib(total), strings.Join(detail, ", "), gib(float64(limit)), what)
}
