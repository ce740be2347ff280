// Command memhog allocates memory without end, 1 MiB at a time, touching every
// page, until the sandbox's memory limit stops it (the Go runtime then dies
// with "out of memory", exit 2).
package main

import (
	"fmt"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "memhog: allocating")
	var chunks [][]byte
	for {
		chunk := make([]byte, 1<<20)
		for i := 0; i < len(chunk); i += 4096 {
			chunk[i] = 1
		}
		chunks = append(chunks, chunk)
	}
}
