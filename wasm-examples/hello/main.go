package main

import (
	"bytes"
	"fmt"
	"io"
	"os"
)

func main() {
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "hello: reading stdin:", err)
		os.Exit(1)
	}
	if _, err := os.Stdout.Write(bytes.ToUpper(in)); err != nil {
		fmt.Fprintln(os.Stderr, "hello: writing stdout:", err)
		os.Exit(1)
	}
}
