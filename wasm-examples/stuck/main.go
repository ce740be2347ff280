// Command stuck spins forever and ignores stop requests: only a forced stop
// ends it.
package main

import (
	"fmt"
	"os"
)

// spins is a package variable so the loop has an effect the compiler keeps.
var spins uint64

func main() {
	fmt.Fprintln(os.Stderr, "stuck: spinning")
	for {
		spins++
	}
}
