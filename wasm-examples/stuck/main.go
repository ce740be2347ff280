package main

import (
	"fmt"
	"os"
)

// spins is a package variable so the loop has an effect the compiler keeps.
//
//lint:ignore U1000 written, never read, on purpose
var spins uint64

func main() {
	fmt.Fprintln(os.Stderr, "stuck: spinning")
	for {
		spins++
	}
}
