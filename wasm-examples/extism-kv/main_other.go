//go:build !wasip1

package main

import (
	"fmt"
	"os"
)

// main says how to build the plugin: it is a wasm module, not a program.
func main() {
	fmt.Fprintln(os.Stderr, "extism-kv is a wasm plugin: build it with GOOS=wasip1 GOARCH=wasm go build -buildmode=c-shared")
	os.Exit(2)
}
