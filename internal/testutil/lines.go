package testutil

import (
	"bufio"
	"io"
	"sync"
)

// AppendLines reads r line by line (a line of up to 1 MiB) until it ends
// or fails, as a test reads a child process's log while it runs: under mu
// it appends each line to *lines, then closes *news and puts a new channel
// in its place, so that whoever waits for a line wakes at each new one.
func AppendLines(r io.Reader, mu *sync.Mutex, lines *[]string, news *chan struct{}) {
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		mu.Lock()
		*lines = append(*lines, sc.Text())
		close(*news)
		*news = make(chan struct{})
		mu.Unlock()
	}
}
