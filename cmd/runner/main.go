package main

import (
	"context"
	"os"
)

func main() {
	stopProfile := startCPUProfile() // diag.go: STINT_CPUPROFILE
	stopTrace := startTrace()        // diag.go: STINT_TRACE
	code := exitCode(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	stopTrace()
	stopProfile()
	os.Exit(code)
}
