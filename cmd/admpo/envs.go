package main

import (
	"fmt"
	"math/rand"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"text/tabwriter"
	"time"

	"github.com/admpo/admpo/envs"
	"github.com/admpo/admpo/envs/remote"
)

func runEnvs(args []string) error {
	help := "Usage: admpo envs list\n       admpo envs run --env NAME|ADDRESS|--env-file FILE [--episodes N] [--seed S]\n" +
		"       admpo envs show --env NAME\n       admpo envs serve --env NAME|--env-file FILE [--listen tcp://HOST:PORT]\n\n" +
		"list   prints every task with its observation/action sizes and control step dt.\n" +
		"run    runs a uniform random policy and prints each episode's return and length, then steps/s.\n" +
		"show   prints a built-in task's task file (YAML), a start for your own (train online --env-file).\n" +
		"serve  serves a built-in task or a task file to remote clients (admpo train online --env tcp://HOST:PORT).\n"
	return runGroup(args, help, "envs needs a sub-command: list, run, show or serve", "envs: unknown sub-command %q (list, run, show, serve)",
		map[string]func([]string) error{"list": envsList, "run": envsRun, "show": envsShow, "serve": envsServe})
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
	name := fs.String("env", "hopper", "task name (see: admpo envs list), or a remote environment's server: tcp://HOST:PORT or unix:///PATH")
	file := fs.String("env-file", "", "task file to run instead of --env (see: admpo envs show)")
	envTimeout := fs.Duration("env-timeout", remote.DefaultTimeout, "a remote environment's longest wait for a connection or an answer")
	episodes := fs.Int("episodes", 3, "number of episodes")
	seed := fs.Int64("seed", 0, "random seed for the initial states and the actions")
	bound(fs, atLeast1, "episodes")
	bound(fs, anyNum, "seed")
	bound(fs, span{Lo: 0, Hi: 86400, Open: true}, "env-timeout")
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
	switch {
	case *file != "":
		t, err := envs.LoadTaskFile(*file)
		if err != nil {
			return usageErr(err)
		}
		if e, err = envs.MakeTask(t); err != nil {
			return err
		}
	case remote.IsAddress(*name):
		var err error
		if e, err = remote.Make(*name, *envTimeout); err != nil {
			return err
		}
	default:
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
	if e.IsBackend() {
		fmt.Printf("%d env steps in %.3fs: %.0f env steps/s\n", total, el, float64(total)/el)
		return nil
	}
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

func envsServe(args []string) error {
	fs := newFlags("envs serve")
	name := fs.String("env", "hopper", "built-in task to serve (see: admpo envs list)")
	file := fs.String("env-file", "", "task file to serve instead of --env (see: admpo envs show)")
	listen := fs.String("listen", "tcp://127.0.0.1:5555", "address to listen on: tcp://HOST:PORT (port 0: any free port) or unix:///PATH")
	copies := fs.Int("copies", 1, "offer each connection up to this many env copies, stepped in batches (docs/remote-envs.md;\n1: none)")
	bound(fs, span{Lo: 1, Hi: remote.MaxCopies}, "copies")
	if err := parse(fs, args); err != nil {
		return err
	}
	if fs.Changed("env") && *file != "" {
		return fmt.Errorf("%w: --env and --env-file cannot both be given", errUsage)
	}
	var t *envs.Task
	var err error
	if *file != "" {
		if t, err = envs.LoadTaskFile(*file); err != nil {
			return usageErr(err)
		}
	} else if t, err = lookupTask(*name); err != nil {
		return err
	}
	e, err := envs.MakeTask(t) // an MJCF that does not load fails here, not in every connection
	if err != nil {
		return err
	}
	e.Close()
	l, err := remote.Listen(*listen)
	if err != nil {
		return err
	}
	addr := *listen
	if strings.HasPrefix(addr, "tcp://") {
		addr = "tcp://" + l.Addr().String()
	}
	if *copies > 1 {
		fmt.Printf("serving %s on %s (up to %d env copies per connection)\n", t.Name, addr, *copies)
	} else {
		fmt.Printf("serving %s on %s\n", t.Name, addr)
	}
	go func() { // Ctrl-C or SIGTERM: stop listening (closing the connections) and return
		c := make(chan os.Signal, 1)
		signal.Notify(c, os.Interrupt, syscall.SIGTERM)
		<-c
		l.Close()
	}()
	return remote.ServeCopies(l, remote.Task(t), *copies)
}
