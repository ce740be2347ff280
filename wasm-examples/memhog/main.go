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
		//lint:ignore SA4010 the chunks are kept so that memory only grows
		chunks = append(chunks, chunk)
	}
}
