package main

import (
	"fmt"
	"math/rand"
	"os"
	"text/tabwriter"
	"time"

	"github.com/admpo/admpo/envs"
)

func runEnvs(args []string) error {
	help := "Usage: admpo envs list\n       admpo envs run --env NAME|--env-file FILE [--episodes N] [--seed S]\n" +
		"       admpo envs show --env NAME\n\n" +
		"list  prints every task with its observation/action sizes and control step dt.\n" +
		"run   runs a uniform random policy and prints each episode's return and length, then steps/s.\n" +
		"show  prints a built-in task's task file (YAML), a start for your own (train online --env-file).\n"
	return runGroup(args, help, "envs needs a sub-command: list, run or show", "envs: unknown sub-command %q (list, run, show)",
		map[string]func([]string) error{"list": envsList, "run": envsRun, "show": envsShow})
}

func envsList(args []string) error {
	fs := newFlags("envs list")
	if err := parse(fs, args); err != nil {
		return err
	}
	w := tabwriter.NewWriter(os.Stdout, 0, 0, 2, ' ', 0)
	fmt.Fprintln(w, "TASK\tOBS\tACT\tDT\tACTION RANGE\tDESCRIPTION")
	for _, n := range envs.Names() {
		e, err := envs.Make(n)
		if err != nil {
			return err
		}
		lo, hi := e.ActionLow(), e.ActionHigh()
		fmt.Fprintf(w, "%s\t%d\t%d\t%g\t[%g, %g]\t%s\n", n, e.Task.ObsDim, e.Task.ActDim, e.Dt(), lo[0], hi[0], e.Task.Summary)
		e.Close()
	}
	fmt.Fprintf(w, "\nMuJoCo %s; episodes are truncated after %d steps.\n", envs.MuJoCoVersion(), envs.MaxEpisodeSteps)
	return w.Flush()
}

func envsRun(args []string) error {
	fs := newFlags("envs run")
	name := fs.String("env", "hopper", "task name (see: admpo envs list)")
	file := fs.String("env-file", "", "task file to run instead of --env (see: admpo envs show)")
	episodes := fs.Int("episodes", 3, "number of episodes")
	seed := fs.Int64("seed", 0, "random seed for the initial states and the actions")
	bound(fs, atLeast1, "episodes")
	bound(fs, anyNum, "seed")
	if err := parse(fs, args); err != nil {
		return err
	}
	if *episodes <= 0 {
		return fmt.Errorf("%w: --episodes must be positive, got %d", errUsage, *episodes)
	}
	if fs.Changed("env") && *file != "" {
		return fmt.Errorf("%w: --env and --env-file cannot both be given", errUsage)
	}
	var e *envs.Env
	if *file != "" {
		t, err := envs.LoadTaskFile(*file)
		if err != nil {
			return usageErr(err)
		}
		if e, err = envs.MakeTask(t); err != nil {
			return err
		}
	} else {
		if _, err := lookupTask(*name); err != nil {
			return err
		}
		var err error
		if e, err = envs.Make(*name); err != nil {
			return err
		}
	}
	defer e.Close()
	e.Seed(*seed)
	start := time.Now()
	r, err := envs.Evaluate(e, envs.UniformActor{Low: e.ActionLow(), High: e.ActionHigh()},
		envs.EvalConfig{Episodes: *episodes, RNG: rand.New(rand.NewSource(*seed))})
	if err != nil {
		return err
	}
	total := 0
	for ep, n := range r.Lengths {
		total += n
		fmt.Printf("episode %d: return %.3f, length %d\n", ep+1, r.Returns[ep], n)
	}
	el := time.Since(start).Seconds()
	fmt.Printf("%d env steps in %.3fs: %.0f env steps/s (%.0f physics steps/s)\n",
		total, el, float64(total)/el, float64(total*e.Task.FrameSkip)/el)
	return nil
}

func envsShow(args []string) error {
	fs := newFlags("envs show")
	name := fs.String("env", "hopper", "built-in task whose task file to print (see: admpo envs list)")
	if err := parse(fs, args); err != nil {
		return err
	}
	b, err := envs.BuiltinTaskFile(*name)
	if err != nil {
		return usageErr(err)
	}
	_, err = os.Stdout.Write(b)
	return err
}
