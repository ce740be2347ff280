package main

import (
	"strings"

	"github.com/stint-run/stint/batch"
	"github.com/stint-run/stint/internal/termsafe"
)

// termSafe is s as the runner shows it on a terminal: every control
// character but the tab, the marks that reorder text and the bytes that
// are not UTF-8 escaped (termsafe.String).
func termSafe(s string) string { return termsafe.String(s) }

// termField is s as one column of a tab-separated line: termSafe with its
// tabs escaped too (\t), so that a tab in a file name or an argument
// cannot start a column of its own.
func termField(s string) string { return strings.ReplaceAll(termsafe.String(s), "\t", `\t`) }

// planLine is --dry-run's line for p: input, output and arguments
// (space-separated), tab-separated, every column escaped (termField).
func planLine(p batch.Planned) string {
	args := make([]string, len(p.Args))
	for i, a := range p.Args {
		args[i] = termField(a)
	}
	return termField(p.Input) + "\t" + termField(p.Output) + "\t" + strings.Join(args, " ")
}
