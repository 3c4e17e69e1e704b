package main

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/admpo/admpo/report"
)

func runPlot(args []string) error {
	fs := newFlags("plot")
	runs := fs.StringArray("runs", []string{"runs/*"}, "glob pattern of run directories (quote it); repeat --runs to join several sets")
	out := fs.String("out", "curves.png", "output image (.png or .svg)")
	title := fs.String("title", "", "plot title (default: the task name)")
	at := fs.IntSlice("at", nil, "also print a Markdown table of mean ± standard error at these steps (env steps online,\n"+
		"warm-up included; policy updates offline), e.g. 15000,25000,35000,45000,55000")
	window := fs.Int("window", 0, "each run's curve, and with --at its cells, the mean of its evaluations in the last WINDOW steps up\n"+
		"to each step (e.g. --window 50000 offline: 50 epochs), for curves that swing between evaluations; 0: the evaluations")
	bound(fs, atLeast1, "at")
	bound(fs, nonNeg, "window")
	if err := parse(fs, args); err != nil {
		return err
	}
	if ext := strings.ToLower(filepath.Ext(*out)); ext != ".png" && ext != ".svg" {
		return fmt.Errorf("%w: --out must end in .png or .svg, got %q", errUsage, *out)
	}
	rs, err := report.LoadRuns(*runs...)
	if err != nil {
		return err
	}
	t := *title
	if t == "" {
		t = rs[0].Env
	}
	xl, yl, err := report.Axes(rs)
	if err != nil {
		return fmt.Errorf("%w: %v", errUsage, err)
	}
	curves := report.Curves(report.Smooth(rs, *window))
	if err := report.Plot(curves, t, xl, yl, *out); err != nil {
		return err
	}
	if err := report.Summary(os.Stdout, rs); err != nil {
		return err
	}
	if err := report.BuildsLine(os.Stdout, rs); err != nil {
		return err
	}
	if len(*at) > 0 {
		fmt.Println()
		if err := report.TableAt(os.Stdout, rs, *at, *window); err != nil {
			return err
		}
	}
	fmt.Printf("wrote %s (%d runs)\n", *out, len(rs))
	return nil
}
