package main

import (
	"context"
	"os"
)

func main() {
	os.Exit(exitCode(run(context.Background(), os.Args[1:], os.Stdin, os.Stdout, os.Stderr)))
}
