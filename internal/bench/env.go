package bench

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"time"
)

// Env describes the machine and build a run happened on.
type Env struct {
	Date       string `json:"date"`
	Command    string `json:"command"`
	CPUs       int    `json:"cpus"`
	CPUModel   string `json:"cpu_model"`
	GOMAXPROCS int    `json:"gomaxprocs"`
	GoVersion  string `json:"go_version"`
	Wazero     string `json:"wazero"`
	GOGC       string `json:"gogc"`
	GOOS       string `json:"goos"`
	GOARCH     string `json:"goarch"`
	// LoadStart and LoadEnd are /proc/loadavg at the start and the end:
	// a load well over the CPU count means a busy machine, noisier numbers.
	LoadStart string `json:"load_start"`
	LoadEnd   string `json:"load_end,omitempty"`
	Quick     bool   `json:"quick"`
}

// CurrentEnv reads the environment of this process.
func CurrentEnv(command string, quick bool) Env {
	return Env{
		Date:       time.Now().UTC().Format(time.RFC3339),
		Command:    command,
		CPUs:       runtime.NumCPU(),
		CPUModel:   cpuModel(),
		GOMAXPROCS: runtime.GOMAXPROCS(0),
		GoVersion:  runtime.Version(),
		Wazero:     depVersion("github.com/tetratelabs/wazero"),
		GOGC:       gogc(),
		GOOS:       runtime.GOOS,
		GOARCH:     runtime.GOARCH,
		LoadStart:  LoadAvg(),
		Quick:      quick,
	}
}

// Markdown writes the environment as a two-column table.
func (e Env) Markdown(w io.Writer) {
	fmt.Fprintf(w, "| | |\n| --- | --- |\n")
	rows := [][2]string{
		{"date (UTC)", e.Date},
		{"command", "`" + e.Command + "`"},
		{"CPU", fmt.Sprintf("%s, %d logical CPUs (GOMAXPROCS %d)", e.CPUModel, e.CPUs, e.GOMAXPROCS)},
		{"Go", e.GoVersion + " " + e.GOOS + "/" + e.GOARCH},
		{"wazero", e.Wazero},
		{"GOGC", e.GOGC},
		{"load average at start / end", e.LoadStart + " / " + e.LoadEnd},
		{"mode", map[bool]string{true: "quick (smoke test: few samples)", false: "full"}[e.Quick]},
	}
	for _, r := range rows {
		fmt.Fprintf(w, "| %s | %s |\n", r[0], r[1])
	}
	fmt.Fprintln(w)
}

// gogc is the effective GOGC setting.
func gogc() string {
	p := debug.SetGCPercent(-1)
	debug.SetGCPercent(p)
	switch {
	case p < 0:
		return "off"
	case os.Getenv("GOGC") == "":
		return strconv.Itoa(p) + " (default)"
	default:
		return strconv.Itoa(p)
	}
}

// cpuModel is the first "model name" of /proc/cpuinfo, or GOARCH.
func cpuModel() string {
	f, err := os.Open("/proc/cpuinfo")
	if err != nil {
		return runtime.GOARCH
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if k, v, ok := strings.Cut(sc.Text(), ":"); ok && strings.TrimSpace(k) == "model name" {
			return strings.TrimSpace(v)
		}
	}
	return runtime.GOARCH
}

// LoadAvg is the first three fields of /proc/loadavg, or "n/a".
func LoadAvg() string {
	b, err := os.ReadFile("/proc/loadavg")
	if err != nil {
		return "n/a"
	}
	f := strings.Fields(string(b))
	if len(f) < 3 {
		return "n/a"
	}
	return strings.Join(f[:3], " ")
}

// depVersion is the version of a module this binary was built with.
func depVersion(path string) string {
	bi, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	for _, d := range bi.Deps {
		if d.Path == path {
			if d.Replace != nil {
				return d.Version + " => " + d.Replace.Path + " " + d.Replace.Version
			}
			return d.Version
		}
	}
	return "unknown"
}
