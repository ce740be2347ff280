package maps_test

import (
	"fmt"
	"go/ast"
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"testing"
	"unicode"
)

// A measured figure is a number followed by one of the units of
// measuredUnit: a ratio (1.06x, 0.7×), a short duration (µs, ns, ms) or a
// rate (tasks/s, files/s, calls/s, jobs/s, MB/s, MiB/s, GB/s); "250k" counts
// as 250000, and a range of two numbers (0.5-1.5x) is one figure. Nothing else is: sizes, counts, seconds and percentages are
// not checked (most are limits or defaults), and neither is code: fenced
// blocks (example output) and inline code spans (quoted messages).
//
// Where README.md, docs/*.md (but docs/benchmarks.md) and the string
// literals of cmd/runner (its --help texts and configuration key docs) quote
// one, it must be
//   - held by the last report: the generated blocks of docs/benchmarks.md
//     (between <!-- bench:NAME begin --> and end, written by make
//     bench-report) have the same number, with the same unit when the unit
//     is one a table cell carries (x, µs, ns, ms; a rate's unit is its
//     column's), or
//   - the text of a link into docs/benchmarks.md (…benchmarks.md#anchor)
//     or into a page of docs/design/ (…design/NAME.md#anchor) whose
//     section's generated blocks have it by the same rule, or whose
//     section is a dated run (it names its command, date and machine: see
//     datedRun) and has it, or
//   - configuration, not a measurement: in figureAllowed.
//
// docs/benchmarks.md and the pages of docs/design/ are where measurements
// are recorded, each with its date, command and machine: they are the
// targets of those links, not checked themselves.
var measuredUnit = `(?:x\b|×|\s?(?:µs|us|ns|ms)\b|\s?(?:tasks|files|calls|jobs)/s\b|\s?(?:MB|MiB|GB)/s\b)`

var measuredRE = regexp.MustCompile(`(?:^|[^\w.,/-])(` + figNum + `(?:\s?[-–]\s?` + figNum + `)?)` + `(` + measuredUnit + `)`)

// figNum is one number of a figure; a figure may be a range of two
// (0.5-1.5x, 45–94x).
const figNum = `\d[\d,]*(?:\.\d+)?k?`

// figureAllowed: file → figures (as written) that are configuration.
var figureAllowed = map[string][]string{
	"docs/plugins.md":       {"500 ms"},          // Config.StopWatchdog's default
	"docs/architecture.md":  {"50 ms"},           // pool.BegunEvery
	"docs/configuration.md": {"100ms", "500 ms"}, // store_wait's first retry (stint.StoreWaitMin); DefaultStopWatchdog
	"docs/security.md":      {"500ms", "50 ms"},  // the watchdog's default; the health check's poll
	"docs/operations.md":    {"100 ms", "50 ms"}, // the claim poll's default; pool.BegunEvery
	"docs/deployment.md":    {"100 ms"},          // the claim poll's default
	"docs/shutdown.md":      {"500 ms", "10 ms"}, // sandbox.stop_watchdog's default; the Go scheduler's time slice (the runtime's forcePreemptNS, a constant)
	"cmd/runner":            {"500ms", "100ms"},  // flag defaults
}

// figure is one measured figure found in a source.
type figure struct {
	file, text string // file relative to the root; text as written
	num, unit  string // normalized: no commas, k expanded; x for ×, µs for us
	line       int
	linkTarget string // the link whose text holds it, if any
}

func TestQuotedFiguresAreReported(t *testing.T) {
	m := loadModule(t)
	page, err := os.ReadFile(filepath.Join(m.root, "docs/benchmarks.md"))
	if err != nil {
		t.Fatal(err)
	}
	report := generatedBlocks(string(page))
	if strings.TrimSpace(report) == "" {
		t.Log("docs/benchmarks.md: the generated blocks are empty (run make bench-report): every figure must be a link or allowed")
	}
	held := heldFigures(report)
	// The pages a figure may link to, by their path in the repository:
	// each maps its headings' anchors to their sections.
	sections := map[string]map[string]string{"docs/benchmarks.md": sectionsByAnchor(string(page))}
	designs, _ := filepath.Glob(filepath.Join(m.root, "docs", "design", "*.md"))
	for _, p := range designs {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(m.root, p)
		sections[filepath.ToSlash(rel)] = sectionsByAnchor(string(b))
	}

	var figs []figure
	mds, _ := filepath.Glob(filepath.Join(m.root, "docs", "*.md"))
	mds = append(mds, filepath.Join(m.root, "README.md"))
	for _, p := range mds {
		rel, _ := filepath.Rel(m.root, p)
		if rel == "docs/benchmarks.md" {
			continue
		}
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		figs = append(figs, markdownFigures(rel, string(b))...)
	}
	figs = append(figs, goStringFigures(t, m.root, "cmd/runner")...)

	for _, f := range figs {
		switch {
		case f.linkTarget != "":
			target, anchor := reportPage(f.linkTarget)
			secs, ok := sections[target]
			if !ok {
				t.Errorf("%s:%d: %q links to %s, which is no page", f.file, f.line, f.text, f.linkTarget)
				continue
			}
			sec, ok := secs[anchor]
			switch {
			case !ok:
				t.Errorf("%s:%d: %q links to %s#%s, which is no heading of it", f.file, f.line, f.text, target, anchor)
			case holds(heldFigures(generatedBlocks(sec)), f):
			case datedRun(sec) == "" && holds(heldFigures(sec), f):
			case datedRun(sec) != "":
				t.Errorf("%s:%d: %q links to %s#%s, whose generated blocks do not have %s%s, and which is not a dated run (%s)", f.file, f.line, f.text, target, anchor, f.num, f.unit, datedRun(sec))
			default:
				t.Errorf("%s:%d: %q links to %s#%s, which does not have %s%s", f.file, f.line, f.text, target, anchor, f.num, f.unit)
			}
		case holds(held, f):
		case listed(figureAllowed, f):
		default:
			t.Errorf("%s:%d: %q is a measured figure that the last report (the generated blocks of docs/benchmarks.md) does not hold: link to the table that does (make bench-report writes them) or to a dated run of docs/benchmarks.md or of a docs/design/ page that has it, or drop it", f.file, f.line, f.text)
		}
	}
}

// holds reports whether held has f: its number with its unit, or alone
// for a rate (a table's rate column carries the unit in its header).
func holds(held map[string]bool, f figure) bool {
	return held[f.num+f.unit] || (rateUnit(f.unit) && held[f.num])
}

var (
	// A command: a fenced block, or inline code that runs go, make or a
	// built binary.
	runCommandRE = regexp.MustCompile("(?m)^```|`(?:go|make|cd|runner|BINARY|/tmp/[^` ]+) [^`]*`")
	runDateRE    = regexp.MustCompile(`\b20\d\d-\d\d-\d\d`) // 2026-12-01, 2026-12-01T06:41Z
	runMachineRE = regexp.MustCompile(`(?i)\b(?:AMD|EPYC|Intel|Xeon|Oxide|Apple M\d|Graviton|Ampere|\d+ (?:logical )?(?:CPUs|cores))\b`)
)

// datedRun is "" when a section of docs/benchmarks.md or of a docs/design/
// page records a run: it
// names its command (a fenced block or inline code that runs something),
// its date (YYYY-MM-DD) and its machine (a CPU vendor or model, or a
// count of CPUs or cores); otherwise what it lacks.
func datedRun(sec string) string {
	var miss []string
	if !runCommandRE.MatchString(sec) {
		miss = append(miss, "no command")
	}
	if !runDateRE.MatchString(sec) {
		miss = append(miss, "no date")
	}
	if !runMachineRE.MatchString(sec) {
		miss = append(miss, "no machine")
	}
	return strings.Join(miss, ", ")
}

// TestMeasuredFigureDefinition pins what counts as a measured figure.
func TestMeasuredFigureDefinition(t *testing.T) {
	for text, want := range map[string][]string{
		"costs 1.06x bare wazero (about 4 µs); 250k tasks/s": {"1.06x", "4µs", "250000tasks/s"},
		"9,495 files/s, 0.91× the pool's, 0.37 µs at p50":    {"9495files/s", "0.91x", "0.37µs"},
		"4 x (32,768 + n), 0x1F, 64 KiB, 500ms, 3 s, 12%":    {"500ms"},
		"v1.12.0 and go1.26.8, 2x":                           {"2x"},
		"loops 45-94x slower, 0.5–1.5x, 1.2-1.7x the RSS":    {"45-94x", "0.5-1.5x", "1.2-1.7x"},
	} {
		var got []string
		for _, f := range markdownFigures("t.md", text) {
			got = append(got, f.num+f.unit)
		}
		if !slices.Equal(got, want) {
			t.Errorf("%q: figures %q, want %q", text, got, want)
		}
	}
	fs := markdownFigures("t.md", "see [0.71x](benchmarks.md#9-runner-batch-filess) and [x](a.md)")
	if len(fs) != 1 || fs[0].linkTarget != "benchmarks.md#9-runner-batch-filess" {
		t.Errorf("link figure: %+v", fs)
	}
	fs = markdownFigures("t.md", "[1.3-1.5x](design/compile-memory.md#the-estimate), [2x](sandbox.md#a), [3x](design/a.md)")
	if len(fs) != 3 || fs[0].linkTarget != "design/compile-memory.md#the-estimate" || fs[1].linkTarget != "" || fs[2].linkTarget != "" {
		t.Errorf("design link figures: %+v", fs)
	}
	for link, want := range map[string][2]string{
		"benchmarks.md#a-run":              {"docs/benchmarks.md", "a-run"},
		"docs/benchmarks.md#a-run":         {"docs/benchmarks.md", "a-run"},
		"design/batch.md#ext4":             {"docs/design/batch.md", "ext4"},
		"docs/design/postgres.md#the-flow": {"docs/design/postgres.md", "the-flow"},
	} {
		if page, anchor := reportPage(link); page != want[0] || anchor != want[1] {
			t.Errorf("reportPage(%q) = %q, %q, want %q, %q", link, page, anchor, want[0], want[1])
		}
	}
	if got := generatedBlocks("a 1x <!-- bench:p begin -->\nb 2x\n<!-- bench:p end --> c 3x"); strings.TrimSpace(got) != "b 2x" {
		t.Errorf("generatedBlocks: %q", got)
	}
	for sec, want := range map[string]string{
		"### A run\n\nAMD EPYC VM, 2026-12-01T06:41Z:\n\n```sh\ngo test ./x -bench Y\n```\n\n1.8 ms": "",
		"### A run\n\n`go test ./sandbox -bench Z`, the Intel Xeon VM, 2026-12-04 20:10Z: 7 µs":      "",
		"### Notes\n\nEach was measured when the code was written: 1.4x":                             "no command, no date, no machine",
		"### Almost\n\n`make bench` on 2 cores: 2x":                                                  "no date",
	} {
		if got := datedRun(sec); got != want {
			t.Errorf("datedRun(%q) = %q, want %q", sec, got, want)
		}
	}
}

func rateUnit(u string) bool { return strings.HasSuffix(u, "/s") }

func listed(l map[string][]string, f figure) bool {
	key := f.file
	if strings.HasPrefix(key, "cmd/runner/") {
		key = "cmd/runner"
	}
	return slices.Contains(l[key], f.text)
}

var blockRE = regexp.MustCompile(`(?s)<!-- bench:([\w-]+) begin -->(.*?)<!-- bench:([\w-]+) end -->`)

// generatedBlocks is the text of every generated block of the page.
func generatedBlocks(page string) string {
	var b strings.Builder
	for _, m := range blockRE.FindAllStringSubmatch(page, -1) {
		b.WriteString(m[2])
	}
	return b.String()
}

// heldFigures is every number of the report, alone (for rates, whose unit
// is the column's) and with its unit where it has one.
func heldFigures(report string) map[string]bool {
	held := map[string]bool{}
	for _, f := range figuresIn("", report, 1) {
		held[f.num+f.unit] = true
	}
	for _, n := range regexp.MustCompile(`\d[\d,]*(?:\.\d+)?`).FindAllString(report, -1) {
		held[strings.ReplaceAll(n, ",", "")] = true
	}
	return held
}

var linkRE = regexp.MustCompile(`\[([^\]]*)\]\(([^)\s]*)\)`)

// markdownFigures finds the figures of a Markdown file outside fenced code.
func markdownFigures(file, text string) []figure {
	var figs []figure
	fenced := false
	for i, line := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(line), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			figs = append(figs, figuresIn(file, blankCode(line), i+1)...)
		}
	}
	return figs
}

// blankCode blanks the inline code spans of a line (quoted messages and
// commands, not claims), keeping every other byte where it was.
func blankCode(line string) string {
	b := []byte(line)
	in := false
	for i, c := range b {
		if c == '`' {
			in = !in
		} else if in {
			b[i] = ' '
		}
	}
	return string(b)
}

// figuresIn finds the figures of one line, each with the link it is in.
func figuresIn(file, line string, n int) []figure {
	links := linkRE.FindAllStringSubmatchIndex(line, -1)
	var figs []figure
	for _, m := range measuredRE.FindAllStringSubmatchIndex(line, -1) {
		num, unit := line[m[2]:m[3]], strings.TrimSpace(line[m[4]:m[5]])
		f := figure{file: file, line: n, text: line[m[2]:m[5]], num: normNum(num), unit: normUnit(unit)}
		for _, l := range links {
			if l[2] <= m[2] && m[5] <= l[3] && reportLinkRE.MatchString(line[l[4]:l[5]]) {
				f.linkTarget = line[l[4]:l[5]]
			}
		}
		figs = append(figs, f)
	}
	return figs
}

// reportLinkRE matches a link into a page that records measurements,
// with an anchor: docs/benchmarks.md or a page of docs/design/.
var reportLinkRE = regexp.MustCompile(`(?:^|/)(?:benchmarks|design/[\w-]+)\.md#`)

// reportPage splits a link that reportLinkRE matches into the page's path
// in the repository and the anchor.
func reportPage(link string) (page, anchor string) {
	target, anchor, _ := strings.Cut(link, "#")
	if i := strings.Index(target, "design/"); i >= 0 {
		return "docs/" + target[i:], anchor
	}
	return "docs/benchmarks.md", anchor
}

func normNum(s string) string {
	if a, b, ok := strings.Cut(strings.ReplaceAll(s, "–", "-"), "-"); ok {
		return normNum(strings.TrimSpace(a)) + "-" + normNum(strings.TrimSpace(b))
	}
	s = strings.ReplaceAll(s, ",", "")
	if k, ok := strings.CutSuffix(s, "k"); ok {
		if v, err := strconv.ParseFloat(k, 64); err == nil {
			return strconv.FormatFloat(v*1000, 'f', -1, 64)
		}
	}
	return s
}

func normUnit(u string) string {
	switch u {
	case "×":
		return "x"
	case "us":
		return "µs"
	}
	return u
}

// goStringFigures finds the figures in the string literals of the
// non-test Go files of dir (help texts, configuration key docs).
func goStringFigures(t *testing.T, root, dir string) []figure {
	files, _ := filepath.Glob(filepath.Join(root, dir, "*.go"))
	var figs []figure
	fset := token.NewFileSet()
	for _, p := range files {
		if strings.HasSuffix(p, "_test.go") {
			continue
		}
		f, err := parser.ParseFile(fset, p, nil, parser.SkipObjectResolution)
		if err != nil {
			t.Fatal(err)
		}
		rel, _ := filepath.Rel(root, p)
		ast.Inspect(f, func(n ast.Node) bool {
			lit, ok := n.(*ast.BasicLit)
			if !ok || lit.Kind != token.STRING {
				return true
			}
			s, err := strconv.Unquote(lit.Value)
			if err != nil {
				return true
			}
			start := fset.Position(lit.Pos()).Line
			for i, line := range strings.Split(s, "\n") {
				figs = append(figs, figuresIn(rel, line, start+i)...)
			}
			return true
		})
	}
	return figs
}

// sectionsByAnchor maps each heading's GitHub anchor to its section's text
// (to the next heading of the same or a higher level).
func sectionsByAnchor(page string) map[string]string {
	lines := strings.Split(page, "\n")
	type head struct {
		level, at int
		anchor    string
	}
	var heads []head
	seen := map[string]int{}
	fenced := false
	for i, l := range lines {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
		}
		if fenced || !strings.HasPrefix(l, "#") {
			continue
		}
		level := len(l) - len(strings.TrimLeft(l, "#"))
		a := slug(strings.TrimSpace(l[level:]))
		if k := seen[a]; k > 0 {
			seen[a] = k + 1
			a = fmt.Sprintf("%s-%d", a, k)
		} else {
			seen[a] = 1
		}
		heads = append(heads, head{level, i, a})
	}
	out := map[string]string{}
	for i, h := range heads {
		end := len(lines)
		for _, n := range heads[i+1:] {
			if n.level <= h.level {
				end = n.at
				break
			}
		}
		out[h.anchor] = strings.Join(lines[h.at:end], "\n")
	}
	return out
}

// slug is GitHub's anchor of a heading: lower case, spaces to hyphens,
// punctuation but hyphens and underscores dropped.
func slug(h string) string {
	var b strings.Builder
	for _, r := range strings.ToLower(h) {
		switch {
		case r == ' ':
			b.WriteRune('-')
		case r == '-' || r == '_' || unicode.IsLetter(r) || unicode.IsDigit(r):
			b.WriteRune(r)
		}
	}
	return b.String()
}
