package main

import (
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/spf13/cobra"
)

// docCommandLine is a command line of doc.go's list: "//\trunner a b|c ...";
// its lowercase words are command names (| between alternatives), the first
// other word (an argument, a flag, the description) ends them.
var docCommandLine = regexp.MustCompile(`^//\trunner((?: [a-z][a-z|-]*)*)`)

// TestDocNamesEveryCommand keeps doc.go's list of commands true: every
// command of the cobra tree (cobra's completion too, not help or hidden
// ones) is named there, and every command named there exists.
func TestDocNamesEveryCommand(t *testing.T) {
	src, err := os.ReadFile("doc.go")
	if err != nil {
		t.Fatal(err)
	}
	named := map[string]bool{}
	for line := range strings.Lines(string(src)) {
		m := docCommandLine.FindStringSubmatch(strings.TrimRight(line, "\n"))
		if m == nil {
			continue
		}
		paths := []string{""}
		for word := range strings.FieldsSeq(m[1]) {
			var next []string
			for _, p := range paths {
				for alt := range strings.SplitSeq(word, "|") {
					next = append(next, strings.TrimSpace(p+" "+alt))
				}
			}
			for _, p := range paths {
				if p != "" {
					named[p] = true
				}
			}
			paths = next
		}
		for _, p := range paths {
			named[p] = true
		}
	}

	root := (&app{}).rootCommand()
	root.InitDefaultCompletionCmd()
	var commands []string
	var walk func(c *cobra.Command, prefix string)
	walk = func(c *cobra.Command, prefix string) {
		for _, sub := range c.Commands() {
			if sub.Hidden || sub.Name() == "help" {
				continue
			}
			path := strings.TrimSpace(prefix + " " + sub.Name())
			commands = append(commands, path)
			walk(sub, path)
		}
	}
	walk(root, "")
	if len(commands) < 5 {
		t.Fatalf("the cobra tree has only %v", commands)
	}
	var problems []string
	for _, c := range commands {
		if !named[c] {
			problems = append(problems, "runner "+c+" is not in doc.go's list of commands: add a line \"//\\trunner "+c+"  what it does\" (or a |"+c[strings.LastIndex(c, " ")+1:]+" alternative)")
		}
	}
	for p := range named {
		if !slices.Contains(commands, p) {
			problems = append(problems, "doc.go lists runner "+p+", which is no command: fix or remove it")
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		t.Errorf("doc.go's list of commands is out of date:\n%s", strings.Join(problems, "\n"))
	}
}
