package main

import (
	"context"
	"os"
)

func main() {
	stopProfile := startCPUProfile() // diag.go: STINT_CPUPROFILE
	code := exitCode(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr))
	stopProfile()
	os.Exit(code)
}
