// Command benchreport runs every benchmark whose numbers docs/benchmarks.md
// publishes, and writes their tables into it between generated markers:
//
//	<!-- bench:NAME begin -->
//	...written by benchreport...
//	<!-- bench:NAME end -->
//
// `make bench-report` runs it (about 10-15 minutes on 2 cores);
// `make bench-report QUICK=1` is a smoke run (a few minutes; few samples) that writes
// a copy of the page (bench/results/report/benchmarks.md) instead of the
// page itself. Each block says its command, date, machine (CPU model,
// cores, load at start and end) and Go and wazero versions; the whole run
// is also in bench/results/report/report.json.
//
//	go run ./internal/bench/cmd/benchreport [-quick] [-queues] [-doc FILE] [-write FILE] [-only NAME,...]
//
// The PostgreSQL queue benchmark (block queues: Stint's `runner serve` on
// PostgreSQL against River, bench/peers/queues, about 6 minutes) is
// optional: it runs only with -queues (or STINT_BENCH_QUEUES=1, or -only
// queues), and needs STINT_TEST_POSTGRES; without them its block is left
// as it was.
//
// Run it from the repository root after `make build wasm`.
package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"

	"github.com/stint-run/stint/internal/bench"
)

func main() {
	if err := run(os.Args[1:], os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "benchreport:", err)
		os.Exit(1)
	}
}

// step is one benchmark command whose Markdown goes into block Name.
type step struct {
	Name   string
	Title  string
	Dir    string   // working directory, relative to the repository root
	Argv   []string // the command; "OUT" is replaced by the step's output directory
	Quick  []string // arguments added in quick mode
	MDFile string   // the Markdown the command writes into OUT; "": its stdout
	// Func, when set, is the step instead of Argv: it returns the
	// Markdown and the command line to show.
	Func    func(quick bool, dir string) (md, cmdline string, err error)
	Minutes string // how long the full run takes on 2 cores, for the log
	// Optional steps run only when asked for (-queues, or by -only).
	Optional bool
	// NeedsEnv names environment variables the step needs; it fails
	// before anything runs when one is empty.
	NeedsEnv []string
}

// steps are the published benchmarks, in the order they run.
var steps = []step{
	{Name: "floor", Title: "The per-task floor, part by part", Func: runFloor, Minutes: "1"},
	{
		Name: "stint", Title: "Stint's own benchmarks", Dir: ".",
		Argv:  []string{"go", "run", "./internal/bench/cmd/stintbench", "-out", "OUT"},
		Quick: []string{"-quick"}, MDFile: "summary.md", Minutes: "3-5",
	},
	{
		Name: "snapshots", Title: "Snapshots: a long task's cost and the queue's short tasks", Dir: ".",
		Argv:  []string{"go", "run", "./internal/bench/cmd/stintbench", "-only", "snapshots", "-out", "OUT"},
		Quick: []string{"-quick"}, MDFile: "summary.md", Minutes: "3-5",
	},
	{
		Name: "peers", Title: "Peers: per-task cost, tasks/s, stop latency, memory", Dir: "bench/peers",
		Argv:  []string{"go", "run", ".", "-n", "1000", "-rounds", "5", "-out", "OUT"},
		Quick: []string{"-quick", "-n", "150", "-rounds", "2"}, MDFile: "peers.md", Minutes: "4-6",
	},
	{
		Name: "plugins", Title: "Peers: warm plugin calls", Dir: "bench/peers",
		Argv:  []string{"go", "run", ".", "-plugins"},
		Quick: []string{"-plugins-n", "2000", "-plugins-rounds", "2", "-plugins-window", "100ms"}, Minutes: "1-2",
	},
	{
		Name: "queues", Title: "PostgreSQL: Stint against River on the same server", Dir: "bench/peers",
		Argv:  []string{"go", "run", "./queues", "-runner", "../../bin/runner", "-n", "10000", "-rounds", "3", "-lat-n", "100", "-kill-n", "3", "-out", "OUT"},
		Quick: []string{"-n", "1000", "-rounds", "1", "-lat-n", "20", "-skip-kill"}, MDFile: "queues.md", Minutes: "6",
		Optional: true, NeedsEnv: []string{"STINT_TEST_POSTGRES"},
	},
}

// Block is one generated block of the page, as report.json holds it.
type Block struct {
	Name     string    `json:"name"`
	Title    string    `json:"title"`
	Command  string    `json:"command"`
	Env      bench.Env `json:"env"`
	Seconds  float64   `json:"seconds"`
	Markdown string    `json:"markdown"`
}

// Report is what one run wrote.
type Report struct {
	Quick  bool     `json:"quick"`
	Commit string   `json:"commit"`
	Blocks []*Block `json:"blocks"`
}

func run(args []string, log io.Writer) error {
	fs := flag.NewFlagSet("benchreport", flag.ContinueOnError)
	fs.SetOutput(log)
	quick := fs.Bool("quick", false, "smoke run (a few minutes): few samples, writes a copy of the page, not the page")
	doc := fs.String("doc", "docs/benchmarks.md", "the page whose generated blocks are replaced")
	write := fs.String("write", "", "where to write the page (default: -doc; with -quick: bench/results/report/benchmarks.md)")
	outDir := fs.String("out", "bench/results/report", "directory for report.json and each step's raw results")
	only := fs.String("only", "", "comma-separated blocks to run (default all but the optional ones: floor, stint, snapshots, peers, plugins; optional: queues)")
	queues := fs.Bool("queues", os.Getenv("STINT_BENCH_QUEUES") == "1", "also run the optional PostgreSQL queue benchmark (block queues, ~6 min; needs STINT_TEST_POSTGRES; default $STINT_BENCH_QUEUES=1)")
	if err := fs.Parse(args); err != nil {
		return err
	}
	if fs.NArg() > 0 {
		return fmt.Errorf("unexpected arguments %q", fs.Args())
	}
	if _, err := os.Stat("go.mod"); err != nil {
		return errors.New("run it from the repository root (no go.mod here)")
	}
	page, err := os.ReadFile(*doc)
	if err != nil {
		return err
	}
	dest := *write
	if dest == "" {
		dest = *doc
		if *quick {
			dest = filepath.Join(*outDir, "benchmarks.md")
		}
	}
	selected, err := pick(*only, *queues)
	if err != nil {
		return err
	}
	for _, s := range selected {
		for _, v := range s.NeedsEnv {
			if os.Getenv(v) == "" {
				return fmt.Errorf("block %s needs %s (e.g. export STINT_TEST_POSTGRES='postgres://postgres@127.0.0.1:5432/test?sslmode=disable')", s.Name, v)
			}
		}
	}
	for _, s := range selected { // every marker must be there before an hour of running
		if _, err := ReplaceBlock(page, s.Name, ""); err != nil {
			return err
		}
	}
	out, err := filepath.Abs(*outDir)
	if err != nil {
		return err
	}
	rep := &Report{Quick: *quick, Commit: gitCommit()}
	began := time.Now()
	for _, s := range selected {
		dir := filepath.Join(out, s.Name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			return err
		}
		argv := s.argv(*quick, dir)
		shown := "go run ./internal/bench/cmd/benchreport"
		if *quick {
			shown += " -quick"
		}
		if s.Optional {
			shown += " -queues"
		}
		env := bench.CurrentEnv("", *quick)
		t0 := time.Now()
		var md []byte
		if s.Func != nil {
			fmt.Fprintf(log, "benchreport: %s (full run: about %s min)\n", s.Name, s.Minutes)
			text, cmdline, err := s.Func(*quick, dir)
			if err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			md, shown = []byte(text), shown+" (block "+s.Name+": "+cmdline+")"
		} else {
			shown += " (block " + s.Name + ": `" + cdPrefix(s.Dir) + strings.Join(s.argv(*quick, "DIR"), " ") + "`)"
			fmt.Fprintf(log, "benchreport: %s: %s%s (full run: about %s min)\n", s.Name, cdPrefix(s.Dir), strings.Join(argv, " "), s.Minutes)
			cmd := exec.Command(argv[0], argv[1:]...)
			cmd.Dir = s.Dir
			var stdout bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, log
			if err := cmd.Run(); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
			md = stdout.Bytes()
		}
		env.Command = shown
		env.LoadEnd = bench.LoadAvg()
		if s.MDFile != "" {
			if md, err = os.ReadFile(filepath.Join(dir, s.MDFile)); err != nil {
				return fmt.Errorf("%s: %w", s.Name, err)
			}
		} else if err := os.WriteFile(filepath.Join(dir, "stdout.md"), md, 0o644); err != nil {
			return err
		}
		// The blocks name the output folder as given (relative to the
		// repository), never the machine's absolute path.
		md = bytes.ReplaceAll(md, []byte(out), []byte(filepath.ToSlash(filepath.Clean(*outDir))))
		b := &Block{Name: s.Name, Title: s.Title, Command: shown, Env: env,
			Seconds: time.Since(t0).Seconds(), Markdown: string(md)}
		rep.Blocks = append(rep.Blocks, b)
		if page, err = ReplaceBlock(page, s.Name, b.render(rep.Commit)); err != nil {
			return err
		}
		// Written after every block, so that a failure later keeps what ran.
		if err := writeAll(dest, page, filepath.Join(out, "report.json"), rep); err != nil {
			return err
		}
	}
	fmt.Fprintf(log, "benchreport: wrote %s and %s in %s\n", dest, filepath.Join(*outDir, "report.json"), time.Since(began).Round(time.Second))
	return nil
}

// pick is the steps to run: those named by only, or else every step but
// the optional ones, which run only when optional is set.
func pick(only string, optional bool) ([]step, error) {
	if only == "" {
		var sel []step
		for _, s := range steps {
			if !s.Optional || optional {
				sel = append(sel, s)
			}
		}
		return sel, nil
	}
	var sel []step
	for _, n := range strings.Split(only, ",") {
		found := false
		for _, s := range steps {
			if s.Name == strings.TrimSpace(n) {
				sel, found = append(sel, s), true
			}
		}
		if !found {
			return nil, fmt.Errorf("no block %q (have floor, stint, snapshots, peers, plugins, queues)", n)
		}
	}
	return sel, nil
}

func (s step) argv(quick bool, out string) []string {
	var a []string
	for _, x := range s.Argv {
		if x == "OUT" {
			x = out
		}
		a = append(a, x)
	}
	if quick {
		a = append(a, s.Quick...)
	}
	return a
}

func cdPrefix(dir string) string {
	if dir == "." {
		return ""
	}
	return "cd " + dir + " && "
}

// render is the block's text: a header table (command, date, machine,
// versions), then the benchmark's own Markdown with its headings pushed
// below the page's.
func (b *Block) render(commit string) string {
	var w strings.Builder
	e := b.Env
	fmt.Fprintf(&w, "<!-- Written by benchreport; edits between the markers are overwritten. -->\n\n")
	fmt.Fprintf(&w, "| | |\n| --- | --- |\n")
	fmt.Fprintf(&w, "| command | %s |\n", e.Command)
	fmt.Fprintf(&w, "| date (UTC) | %s (took %s) |\n", e.Date, (time.Duration(b.Seconds) * time.Second).String())
	fmt.Fprintf(&w, "| machine | %s, %d logical CPUs (GOMAXPROCS %d), %s/%s |\n", e.CPUModel, e.CPUs, e.GOMAXPROCS, e.GOOS, e.GOARCH)
	fmt.Fprintf(&w, "| load average at start / end | %s / %s |\n", e.LoadStart, e.LoadEnd)
	fmt.Fprintf(&w, "| Go / wazero | %s / %s |\n", e.GoVersion, e.Wazero)
	fmt.Fprintf(&w, "| commit | %s |\n", commit)
	if e.Quick {
		fmt.Fprintf(&w, "| mode | **quick** (smoke run: few samples, not for quoting) |\n")
	}
	w.WriteString("\n")
	for _, line := range strings.Split(strings.TrimSpace(b.Markdown), "\n") {
		if n := len(line) - len(strings.TrimLeft(line, "#")); n > 0 && n < 4 && strings.HasPrefix(line[n:], " ") {
			line = "####" + line[n:] // under the page's "### <block title>"
		}
		w.WriteString(line + "\n")
	}
	return w.String()
}

// ReplaceBlock returns page with the text between the markers of block
// name replaced by body. It fails when the markers are missing, repeated
// or out of order.
func ReplaceBlock(page []byte, name, body string) ([]byte, error) {
	begin := []byte("<!-- bench:" + name + " begin -->")
	end := []byte("<!-- bench:" + name + " end -->")
	i, j := bytes.Index(page, begin), bytes.Index(page, end)
	switch {
	case i < 0 || j < 0:
		return nil, fmt.Errorf("the page has no markers %s ... %s: add them where the block goes", begin, end)
	case bytes.Count(page, begin) > 1 || bytes.Count(page, end) > 1:
		return nil, fmt.Errorf("the markers of block %s are on the page more than once", name)
	case j < i:
		return nil, fmt.Errorf("the end marker of block %s comes before its begin marker", name)
	}
	var out bytes.Buffer
	out.Write(page[:i+len(begin)])
	out.WriteString("\n")
	if body != "" {
		out.WriteString(strings.TrimRight(body, "\n") + "\n")
	}
	out.Write(page[j:])
	return out.Bytes(), nil
}

func writeAll(dest string, page []byte, jsonPath string, rep *Report) error {
	if err := os.MkdirAll(filepath.Dir(dest), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(dest, page, 0o644); err != nil {
		return err
	}
	j, err := json.MarshalIndent(rep, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(jsonPath, append(j, '\n'), 0o644)
}

func gitCommit() string {
	out, err := exec.Command("git", "rev-parse", "--short", "HEAD").Output()
	if err != nil {
		return "unknown"
	}
	c := strings.TrimSpace(string(out))
	if st, err := exec.Command("git", "status", "--porcelain", "--untracked-files=no").Output(); err == nil && len(bytes.TrimSpace(st)) > 0 {
		c += " (with uncommitted changes)"
	}
	return c
}
