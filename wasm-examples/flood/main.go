// Command flood writes to stdout without end, until the sandbox's output limit
// (or a stop) ends it. Write errors are ignored on purpose.
package main

import (
	"bytes"
	"os"
)

func main() {
	line := []byte("flood flood flood flood flood flood flood flood flood flood flood\n")
	buf := bytes.Repeat(line, 64<<10/len(line))
	for {
		_, _ = os.Stdout.Write(buf)
	}
}
