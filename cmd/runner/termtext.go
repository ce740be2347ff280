package main

import (
	"fmt"
	"io"
	"os"
	"strings"

	"golang.org/x/term"
)

// The other commands print what a submitter, a guest or a file system
// controls (queue names, labels, reasons, guest stderr tails, file names
// in errors) through termSafe (batch_escape.go), as runner batch does:
// tasks show, tasks list, tasks stats, tasks prune, submit --wait's error
// and the runner's error line. JSON output is not escaped (JSON encodes
// these itself), nor a task's result, nor the guest's own stderr that
// runner run passes through as a shell would.

// termLines is termSafe for text of several lines: each line escaped,
// the line breaks kept.
func termLines(s string) string {
	lines := strings.Split(s, "\n")
	for i, l := range lines {
		lines[i] = termSafe(l)
	}
	return strings.Join(lines, "\n")
}

// count is n and its noun, singular or plural: "1 task", "3 tasks", "0
// entries".
func count(n int64, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "y") {
		return fmt.Sprintf("%d %sies", n, strings.TrimSuffix(noun, "y"))
	}
	return fmt.Sprintf("%d %ss", n, noun)
}

// terminalFd is w's file descriptor when w is a terminal.
func terminalFd(w io.Writer) (int, bool) {
	f, ok := w.(*os.File)
	if !ok || !term.IsTerminal(int(f.Fd())) {
		return -1, false
	}
	return int(f.Fd()), true
}
