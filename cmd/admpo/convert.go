package main

import (
	"fmt"
	"os"

	"github.com/admpo/admpo/datasets"
	"github.com/admpo/admpo/envs"
)

func runConvert(args []string) error {
	fs := newFlags("convert")
	in := fs.String("in", "", "D4RL .hdf5 file or Minari data set directory")
	out := fs.String("out", "", "output: a Minari directory for a D4RL input, a D4RL file for a Minari input")
	env := fs.String("env", "", "task whose action bounds the Minari action space takes (default: the data's metadata)")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *in == "" || *out == "" {
		return fmt.Errorf("%w: convert needs --in and --out", errUsage)
	}
	if _, err := os.Stat(*out); err == nil {
		return fmt.Errorf("%w: --out %s exists", errUsage, *out)
	}
	if *env != "" {
		t, err := lookupTask(*env)
		if err != nil {
			return err
		}
		*env = t.Name
	}
	if datasets.IsMinari(*in) {
		d, err := datasets.ReadMinari(*in)
		if err != nil {
			return err
		}
		if err := datasets.WriteD4RL(*out, d); err != nil {
			return err
		}
		fmt.Printf("wrote %s: %d transitions, %d episodes (D4RL layout)\n", *out, d.N, len(d.Episodes()))
		return nil
	}
	d, err := datasets.ReadD4RL(*in)
	if err != nil {
		return err
	}
	task := *env
	if task == "" && d.Meta["env_file"] == "" { // a task file's data: not the built-in task of that name
		if t, err := envs.Lookup(d.Meta["env"]); err == nil && d.Meta["env"] != "" {
			task = t.Name
		}
	}
	var low, high []float64
	if task != "" {
		t, _ := envs.Lookup(task)
		if t.ActDim != d.ActDim {
			return fmt.Errorf("%w: %s has %d action values, the task %s %d", errUsage, *in, d.ActDim, t.Name, t.ActDim)
		}
		e, err := envs.MakeTask(t)
		if err != nil {
			return err
		}
		low, high = e.ActionLow(), e.ActionHigh()
		e.Close()
	}
	if err := writeDataset(*out, "minari", d, low, high); err != nil {
		return err
	}
	fmt.Printf("wrote %s: %d transitions, %d episodes (Minari, dataset id %s)\n", *out, d.N, len(d.Episodes()), minariID(d, *out))
	return nil
}
