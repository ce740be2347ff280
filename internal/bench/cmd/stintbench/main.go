// Command stintbench runs Stint's benchmarks (package bench) and prints
// Markdown tables; with -out it also writes every raw sample as JSON and
// CSV. `make bench` runs it after building bin/runner and the Go guests.
//
//	go run ./internal/bench/cmd/stintbench [-quick] [-only NAME] [-out DIR] [-runner PATH] [-base-runner PATH] [-cpuprofile FILE]
//
// Run it from the repository (it finds the root through go.mod). The full
// run takes a few minutes; -quick is a smoke test of about half a minute.
// A benchmark with a block of its own in the report (bench.Benchmark.Own:
// snapshots) runs only when -only names it.
package main

import (
	"bufio"
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"path/filepath"
	"runtime/pprof"
	"strings"
	"time"

	"github.com/stint-run/stint/internal/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "stintbench:", err)
		os.Exit(1)
	}
}

func run(args []string, stdout, stderr io.Writer) error {
	fs := flag.NewFlagSet("stintbench", flag.ContinueOnError)
	fs.SetOutput(stderr)
	out := fs.String("out", "", "directory for the raw results (JSON and CSV per benchmark, summary.md, env.json); empty: none")
	quick := fs.Bool("quick", false, "smoke mode: few samples, finishes in under 30 s")
	only := fs.String("only", "", "run only this benchmark: "+names()+" (without -only: all but "+ownNames()+", which have a block of their own in the report)")
	runner := fs.String("runner", "bin/runner", "the built runner binary (make build), for the shutdown benchmark")
	baseRunner := fs.String("base-runner", "", "another runner binary (an earlier build) the batch benchmark runs in the same rounds, for a before/after ratio")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile of the run to this file")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	root, err := repoRoot()
	if err != nil {
		return err
	}
	runnerPath := *runner
	if !filepath.IsAbs(runnerPath) {
		runnerPath = filepath.Join(root, runnerPath)
	}
	opts := bench.Options{Quick: *quick, Runner: runnerPath, BaseRunner: *baseRunner, RepoRoot: root, Log: stderr}.WithDefaults()

	var selected []bench.Benchmark
	for _, b := range bench.All {
		if *only == "" && !b.Own || b.Name == *only {
			selected = append(selected, b)
		}
	}
	if len(selected) == 0 {
		return fmt.Errorf("no benchmark %q; have %s", *only, names())
	}
	for _, b := range selected {
		if b.Name == "shutdown" {
			if _, err := os.Stat(runnerPath); err != nil {
				return fmt.Errorf("the shutdown benchmark needs the runner binary: %w (run make build, or pass -runner)", err)
			}
		}
	}
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			return err
		}
		if err := pprof.StartCPUProfile(f); err != nil {
			return err
		}
		defer func() { pprof.StopCPUProfile(); _ = f.Close() }()
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	env := bench.CurrentEnv("go run ./internal/bench/cmd/stintbench "+strings.Join(args, " "), *quick)
	var doc strings.Builder
	w := io.MultiWriter(stdout, &doc)
	began := time.Now()
	var results []*bench.Result
	for _, b := range selected {
		fmt.Fprintf(stderr, "stintbench: %s\n", b.Title)
		t0 := time.Now()
		res, err := b.Run(ctx, opts)
		if err != nil {
			return fmt.Errorf("%s: %w", b.Name, err)
		}
		fmt.Fprintf(stderr, "stintbench: %s took %s\n", b.Name, time.Since(t0).Round(100*time.Millisecond))
		fmt.Fprintf(w, "## %s\n\n", b.Title)
		res.Markdown(w)
		results = append(results, res)
	}
	env.LoadEnd = bench.LoadAvg()
	fmt.Fprintf(w, "## Environment\n\n")
	env.Markdown(w)
	fmt.Fprintf(w, "Total time: %s.\n\n", time.Since(began).Round(time.Second))
	if *out == "" {
		return nil
	}
	dir := *out
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(root, dir)
	}
	var errs []error
	for _, r := range results {
		errs = append(errs, r.Save(dir))
	}
	errs = append(errs, writeJSON(filepath.Join(dir, "env.json"), env),
		os.WriteFile(filepath.Join(dir, "summary.md"), []byte(doc.String()), 0o644))
	if err := errors.Join(errs...); err != nil {
		return err
	}
	fmt.Fprintf(stderr, "stintbench: raw results in %s\n", dir)
	return nil
}

func names() string {
	var n []string
	for _, b := range bench.All {
		n = append(n, b.Name)
	}
	return strings.Join(n, ", ")
}

// ownNames lists the benchmarks that run only when -only names them.
func ownNames() string {
	var n []string
	for _, b := range bench.All {
		if b.Own {
			n = append(n, b.Name)
		}
	}
	return strings.Join(n, ", ")
}

// repoRoot is the nearest directory up from the working directory whose
// go.mod declares the main module.
func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for d := wd; ; d = filepath.Dir(d) {
		if f, err := os.Open(filepath.Join(d, "go.mod")); err == nil {
			sc := bufio.NewScanner(f)
			found := sc.Scan() && strings.TrimSpace(sc.Text()) == "module github.com/stint-run/stint"
			f.Close()
			if found {
				return d, nil
			}
		}
		if filepath.Dir(d) == d {
			return "", fmt.Errorf("not inside the stint repository (no go.mod of github.com/stint-run/stint above %s)", wd)
		}
	}
}
