package main

import (
	"io"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/admpo/admpo/train"
)

// TestStatusRateCountsFromFirstStatus: a resumed run's log line must give
// the rate of the steps done since it started (100 steps in 20 s: 5 steps/s,
// ETA 99,900/5 s), not count the 900,000 steps of earlier sessions as done
// in those 20 s; an offline run's rate counts from the end of its model fit.
func TestStatusRateCountsFromFirstStatus(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	now := t0
	clock = func() time.Time { return now }
	defer func() { clock = time.Now }()
	r, w, err := os.Pipe()
	if err != nil {
		t.Fatal(err)
	}
	stdout := os.Stdout
	os.Stdout = w
	print := statusPrinter(1_000_000, 0) // done 0: what collect passes for a resumed behaviour run
	now = t0.Add(time.Second)
	print(train.Status{Step: 900_000, Steps: 1_000_000})
	now = t0.Add(21 * time.Second)
	print(train.Status{Step: 900_100, Steps: 1_000_000})
	// An offline run: statuses at update 0 through a 40-minute model fit,
	// then 100 updates in 20 s.
	print = statusPrinter(200_000, 0)
	now = t0.Add(time.Second)
	print(train.Status{Step: 0, Steps: 200_000})
	now = t0.Add(2401 * time.Second)
	print(train.Status{Step: 0, Steps: 200_000, Message: "model fit done"})
	now = t0.Add(2421 * time.Second)
	print(train.Status{Step: 100, Steps: 200_000})
	os.Stdout = stdout
	w.Close()
	out, _ := io.ReadAll(r)
	for _, want := range []string{"step 900100/1000000 (5 steps/s, ETA 5h33m0s)", "step 100/200000 (5 steps/s, ETA 11h6m20s)"} {
		if !strings.Contains(string(out), want) {
			t.Errorf("status lines:\n%s\nwant one with %q", out, want)
		}
	}
}
