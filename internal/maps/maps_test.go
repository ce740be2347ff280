package maps_test

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"testing"
)

// exempt lists packages that need no row in the table, each with its
// reason. None does today: test-only and example packages have rows too.
var exempt = map[string]string{}

// completeFileLists are the packages whose doc.go is the map of their
// files: it must name every non-test .go file of the package (a glob such
// as batch*.go names all it matches). Other doc.go files may name a few
// files; those must exist.
var completeFileLists = map[string]string{
	"pool":       "its doc.go's last paragraph says which file holds which of the pool's jobs",
	"cmd/runner": "its doc.go's last paragraph says which file holds which command",
}

// pkg is what go list says of one package.
type pkg struct {
	ImportPath     string
	Dir            string
	GoFiles        []string
	CgoFiles       []string
	IgnoredGoFiles []string
	Imports        []string
	TestImports    []string
	XTestImports   []string

	rel string // the path in the module; "stint" for the root
}

// module is the module's packages, listed once for all tests.
var module = sync.OnceValues(func() (*moduleInfo, error) {
	out, err := goCmd("", "list", "-m", "-f", "{{.Path}}\n{{.Dir}}")
	if err != nil {
		return nil, err
	}
	path, dir, _ := strings.Cut(strings.TrimSpace(out), "\n")
	m := &moduleInfo{path: path, root: dir, byRel: map[string]*pkg{}}
	out, err = goCmd(dir, "list", "-e", "-json=ImportPath,Dir,GoFiles,CgoFiles,IgnoredGoFiles,Imports,TestImports,XTestImports", "./...")
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(strings.NewReader(out))
	for {
		p := new(pkg)
		if err := dec.Decode(p); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		rel, ok := m.relOf(p.ImportPath)
		if !ok {
			continue
		}
		p.rel = rel
		m.pkgs = append(m.pkgs, p)
		m.byRel[rel] = p
	}
	if len(m.pkgs) == 0 {
		return nil, errors.New("go list ./... listed no package")
	}
	return m, nil
})

type moduleInfo struct {
	path, root string
	pkgs       []*pkg
	byRel      map[string]*pkg
}

// relOf turns an import path into a path in the module ("stint" for the
// root); ok is false for a package of another module.
func (m *moduleInfo) relOf(importPath string) (rel string, ok bool) {
	if importPath == m.path {
		return "stint", true
	}
	rel, ok = strings.CutPrefix(importPath, m.path+"/")
	return rel, ok
}

// internalImports returns the module's packages among imports, sorted,
// without self.
func (m *moduleInfo) internalImports(self string, imports ...[]string) []string {
	var out []string
	for _, list := range imports {
		for _, imp := range list {
			if rel, ok := m.relOf(imp); ok && rel != self && !slices.Contains(out, rel) {
				out = append(out, rel)
			}
		}
	}
	slices.Sort(out)
	return out
}

func goCmd(dir string, args ...string) (string, error) {
	cmd := exec.Command("go", args...)
	cmd.Dir = dir
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("go %s: %w\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return string(out), nil
}

func loadModule(t *testing.T) *moduleInfo {
	t.Helper()
	if _, err := exec.LookPath("go"); err != nil {
		t.Skip("no go command on PATH")
	}
	m, err := module()
	if err != nil {
		t.Fatal(err)
	}
	return m
}

// rule is what a "may import" cell allows.
type rule struct {
	all    bool
	except []string // with all
	only   []string // without all
}

func (r rule) allows(rel string) bool {
	if r.all {
		return !slices.ContainsFunc(r.except, func(p string) bool { return match(p, rel) })
	}
	return slices.ContainsFunc(r.only, func(p string) bool { return match(p, rel) })
}

// match reports whether the package rel is pattern: a path, or one ending
// in "/..." for it and every package below it.
func match(pattern, rel string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return rel == base || strings.HasPrefix(rel, base+"/")
	}
	return rel == pattern
}

// row is one row of the package table.
type row struct {
	line     int      // in the file, 1-based
	name     string   // its first cell as written, for messages
	patterns []string // the packages it is for
	job      string
	imports  rule // may import
	tests    rule // its tests may also import
	named    []string
}

func (r row) String() string { return fmt.Sprintf("row %s (docs/architecture.md:%d)", r.name, r.line) }

var (
	backticked = regexp.MustCompile("`([^`]+)`")
	goFileName = regexp.MustCompile(`[\w/.*-]*[\w*]\.go`)
)

// goNames returns the .go file names in s: not names like pkg.go.dev or
// x.golden, but a name that ends a sentence.
func goNames(s string) []string {
	var out []string
	for _, loc := range goFileName.FindAllStringIndex(s, -1) {
		rest := s[loc[1]:]
		rest = strings.TrimPrefix(rest, ".")
		if rest != "" && (rest[0] == '_' || rest[0] == '/' || rest[0] == '-' || rest[0] == '.' ||
			'a' <= rest[0] && rest[0] <= 'z' || 'A' <= rest[0] && rest[0] <= 'Z' || '0' <= rest[0] && rest[0] <= '9') {
			continue
		}
		out = append(out, s[loc[0]:loc[1]])
	}
	return out
}

// dropAsides removes text in parentheses (nested too).
func dropAsides(s string) string {
	var b strings.Builder
	depth := 0
	for _, r := range s {
		switch {
		case r == '(':
			depth++
		case r == ')' && depth > 0:
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return b.String()
}

func ticked(s string) []string {
	var out []string
	for _, m := range backticked.FindAllStringSubmatch(s, -1) {
		out = append(out, m[1])
	}
	return out
}

// parseRule reads a "may import" cell (see docs/architecture.md, above the
// table): asides in parentheses and text after ";" are for people.
func parseRule(cell string) (rule, []string) {
	text, _, _ := strings.Cut(dropAsides(cell), ";")
	text = strings.TrimSpace(text)
	names := ticked(text)
	switch {
	case text == "" || text == "—" || text == "-" || strings.HasPrefix(text, "nothing"):
		return rule{}, nil
	case strings.HasPrefix(text, "anything but"):
		return rule{all: true, except: names}, names
	case strings.HasPrefix(text, "anything"):
		return rule{all: true}, nil
	}
	return rule{only: names}, names
}

// readTable parses the table under "## The packages" in
// docs/architecture.md. Malformed rows are problems.
func readTable(root string) (rows []row, problems []string, err error) {
	src, err := os.ReadFile(filepath.Join(root, "docs", "architecture.md"))
	if err != nil {
		return nil, nil, err
	}
	lines := strings.Split(string(src), "\n")
	start := slices.Index(lines, "## The packages")
	if start < 0 {
		return nil, nil, errors.New(`docs/architecture.md has no "## The packages" section`)
	}
	inTable := false
	for i := start + 1; i < len(lines); i++ {
		line := strings.TrimSpace(lines[i])
		if !strings.HasPrefix(line, "|") {
			if inTable || strings.HasPrefix(line, "## ") {
				break
			}
			continue
		}
		if !inTable { // the header, then the separator
			inTable = true
			i++
			continue
		}
		cells := strings.Split(strings.TrimSuffix(strings.TrimPrefix(line, "|"), "|"), " | ")
		if len(cells) != 4 || !strings.HasSuffix(line, "|") {
			problems = append(problems, fmt.Sprintf("docs/architecture.md:%d is a malformed row (%d cells, want 4: | package | its one job | may import | its tests may also import |): %s", i+1, len(cells), line))
			continue
		}
		for j := range cells {
			cells[j] = strings.TrimSpace(cells[j])
		}
		r := row{line: i + 1, name: cells[0], patterns: ticked(dropAsides(cells[0])), job: cells[1]}
		if len(r.patterns) == 0 {
			problems = append(problems, fmt.Sprintf("docs/architecture.md:%d names no package in backticks in its first cell: %s", i+1, line))
			continue
		}
		var n3, n4 []string
		r.imports, n3 = parseRule(cells[2])
		r.tests, n4 = parseRule(cells[3])
		r.named = append(n3, n4...)
		rows = append(rows, r)
	}
	if len(rows) == 0 && len(problems) == 0 {
		return nil, nil, errors.New(`docs/architecture.md: no table under "## The packages"`)
	}
	return rows, problems, nil
}

// rowFor returns the row of package rel: the one naming it exactly, else
// the "/..." row with the longest path that matches it.
func rowFor(rows []row, rel string) (*row, []string) {
	var exact []*row
	var best *row
	bestLen := -1
	for i := range rows {
		for _, p := range rows[i].patterns {
			if p == rel {
				exact = append(exact, &rows[i])
			} else if match(p, rel) && len(p) > bestLen {
				best, bestLen = &rows[i], len(p)
			}
		}
	}
	if len(exact) > 1 {
		var where []string
		for _, r := range exact {
			where = append(where, r.String())
		}
		return exact[0], []string{fmt.Sprintf("package `%s` has %d rows (%s): keep one", rel, len(exact), strings.Join(where, ", "))}
	}
	if len(exact) == 1 {
		return exact[0], nil
	}
	return best, nil
}

func cellOf(names []string) string {
	if len(names) == 0 {
		return "nothing"
	}
	return "`" + strings.Join(names, "`, `") + "`"
}

// TestPackageTable checks the package table of docs/architecture.md
// against go list: every package has a row, every row names packages that
// exist, and every import of one of the module's packages is one its row
// allows.
func TestPackageTable(t *testing.T) {
	m := loadModule(t)
	rows, problems, err := readTable(m.root)
	if err != nil {
		t.Fatal(err)
	}
	exists := func(pattern string) bool {
		return slices.ContainsFunc(m.pkgs, func(p *pkg) bool { return match(pattern, p.rel) })
	}
	for _, r := range rows {
		for _, p := range r.patterns {
			if !exists(p) {
				problems = append(problems, fmt.Sprintf("%s: `%s` is no package of the module (go list ./...): remove it, or rename it to where its package moved", r, p))
			}
		}
		for _, p := range r.named {
			if !exists(p) {
				problems = append(problems, fmt.Sprintf("%s: its import columns name `%s`, which is no package of the module: fix or drop the name", r, p))
			}
		}
		// The .go files a row names exist: in the row's first package, or
		// from the repository's root for a name with a "/".
		dir := strings.TrimSuffix(r.patterns[0], "/...")
		if dir == "stint" {
			dir = "."
		}
		for _, name := range goNames(r.job) {
			path := filepath.Join(m.root, dir, name)
			if strings.Contains(name, "/") {
				path = filepath.Join(m.root, name)
			}
			if !globExists(path) {
				problems = append(problems, fmt.Sprintf("%s: its job names `%s`, which does not exist (in %s): fix the name", r, name, dir))
			}
		}
	}
	for _, p := range m.pkgs {
		if _, ok := exempt[p.rel]; ok {
			continue
		}
		imports := m.internalImports(p.rel, p.Imports)
		r, dup := rowFor(rows, p.rel)
		problems = append(problems, dup...)
		if r == nil {
			var testOnly []string
			for _, imp := range m.internalImports(p.rel, p.TestImports, p.XTestImports) {
				if !slices.Contains(imports, imp) {
					testOnly = append(testOnly, imp)
				}
			}
			tests := "—"
			if len(testOnly) > 0 {
				tests = cellOf(testOnly)
			}
			problems = append(problems, fmt.Sprintf("package `%s` has no row: add to docs/architecture.md's table\n\t| `%s` | <its one job> | %s | %s |\n\t(its imports today; narrow them to what it may import)", p.rel, p.rel, cellOf(imports), tests))
			continue
		}
		for _, imp := range imports {
			if !r.imports.allows(imp) {
				problems = append(problems, fmt.Sprintf("`%s` imports `%s`, which its %s does not allow: add `%s` to that row's \"may import\" cell (or drop the import)", p.rel, imp, r, imp))
			}
		}
		for _, imp := range m.internalImports(p.rel, p.TestImports, p.XTestImports) {
			if !r.imports.allows(imp) && !r.tests.allows(imp) {
				problems = append(problems, fmt.Sprintf("the tests of `%s` import `%s`, which its %s does not allow: add `%s` to that row's \"its tests may also import\" cell (or drop the import)", p.rel, imp, r, imp))
			}
		}
	}
	report(t, "docs/architecture.md's package table is out of date", problems)
}

// TestDocFileLists checks the .go files the packages' doc.go files name:
// each exists (in the package, or from the repository's root for a name
// with a "/"), and a doc.go that is its package's map of files
// (completeFileLists) names every non-test .go file of the package.
func TestDocFileLists(t *testing.T) {
	m := loadModule(t)
	var problems []string
	for rel := range completeFileLists {
		if m.byRel[rel] == nil {
			problems = append(problems, fmt.Sprintf("completeFileLists (internal/maps) names %s, which is no package: fix it", rel))
		}
	}
	for _, p := range m.pkgs {
		src, err := os.ReadFile(filepath.Join(p.Dir, "doc.go"))
		if errors.Is(err, os.ErrNotExist) {
			continue
		} else if err != nil {
			t.Fatal(err)
		}
		var globs []string
		for _, name := range goNames(string(src)) {
			path := filepath.Join(p.Dir, name)
			if strings.Contains(name, "/") {
				path = filepath.Join(m.root, name)
			} else {
				globs = append(globs, name)
			}
			if !globExists(path) {
				problems = append(problems, fmt.Sprintf("%s/doc.go names %s, which does not exist: fix the name (moved? say where) or drop it", p.rel, name))
			}
		}
		if _, ok := completeFileLists[p.rel]; !ok {
			continue
		}
		var files []string
		for _, list := range [][]string{p.GoFiles, p.CgoFiles, p.IgnoredGoFiles} {
			for _, f := range list {
				if !strings.HasSuffix(f, "_test.go") && f != "doc.go" {
					files = append(files, f)
				}
			}
		}
		slices.Sort(files)
		for _, f := range slices.Compact(files) {
			named := slices.ContainsFunc(globs, func(g string) bool {
				ok, _ := filepath.Match(g, f)
				return ok
			})
			if !named {
				problems = append(problems, fmt.Sprintf("%s/doc.go does not name %s: its doc.go is the package's map of files (%s); say there what %s holds", p.rel, f, completeFileLists[p.rel], f))
			}
		}
	}
	report(t, "doc.go file lists are out of date", problems)
}

func globExists(path string) bool {
	matches, err := filepath.Glob(path)
	return err == nil && len(matches) > 0
}

func report(t *testing.T, title string, problems []string) {
	t.Helper()
	if len(problems) == 0 {
		return
	}
	slices.Sort(problems)
	problems = slices.Compact(problems)
	t.Errorf("%s (%d):\n%s", title, len(problems), strings.Join(problems, "\n"))
}
