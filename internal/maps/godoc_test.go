package maps_test

import (
	"fmt"
	"strings"
	"testing"
)

// docLineBudgets caps the length of `go doc -all` of the packages whose
// API a newcomer reads first, each with its reason. The detail a line of
// doc cannot hold goes to the package's docs/*.md page, linked from it.
var docLineBudgets = map[string]struct {
	lines int
	why   string
}{
	"sandbox": {700, "issue 25: one-line field comments, the detail in docs/sandbox.md and docs/configuration.md"},
	"tasks":   {1450, "issue 43: one Store interface, its methods grouped, and few optional capabilities (1,473 lines before the fold, 1,407 after)"},
}

// TestGoDocLength fails when `go doc -all` of a package in docLineBudgets
// is longer than its budget.
func TestGoDocLength(t *testing.T) {
	m := loadModule(t)
	var problems []string
	for rel, b := range docLineBudgets {
		p := m.byRel[rel]
		if p == nil {
			problems = append(problems, fmt.Sprintf("docLineBudgets (internal/maps) names %s, which is no package: fix it", rel))
			continue
		}
		out, err := goCmd(m.root, "doc", "-all", "./"+rel)
		if err != nil {
			t.Fatal(err)
		}
		if n := strings.Count(out, "\n"); n > b.lines {
			problems = append(problems, fmt.Sprintf("`go doc -all ./%s` is %d lines, over its budget of %d (%s): shorten doc comments to a line or two and move the detail to the docs page they link", rel, n, b.lines, b.why))
		}
	}
	report(t, "go doc too long", problems)
}
