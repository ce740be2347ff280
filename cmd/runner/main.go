// Command runner runs untrusted WebAssembly tasks in wazero sandboxes, from
// a durable queue, and stops them without losing work. See README.md.
package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(exitCode(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)))
}
