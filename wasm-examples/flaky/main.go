package main

import (
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"

	"github.com/stint-run/stint/guest"
)

func main() {
	k := 3
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flaky: reading stdin:", err)
		os.Exit(1)
	}
	if text := strings.TrimSpace(string(in)); text != "" {
		if k, err = strconv.Atoi(text); err != nil {
			fmt.Fprintln(os.Stderr, "flaky: stdin is not a number:", err)
			os.Exit(1)
		}
	}

	attempts := 0 // attempts before this one
	if cp, ok := guest.LoadCheckpoint(); ok {
		if attempts, err = strconv.Atoi(string(cp)); err != nil {
			fmt.Fprintf(os.Stderr, "flaky: bad checkpoint %q: %v\n", cp, err)
			os.Exit(1)
		}
	}
	n := attempts + 1
	if err := guest.SaveCheckpoint([]byte(strconv.Itoa(n))); err != nil {
		fmt.Fprintln(os.Stderr, "flaky: saving checkpoint:", err)
		os.Exit(1)
	}
	if n < k {
		fmt.Fprintf(os.Stderr, "flaky: failing attempt %d\n", n)
		os.Exit(1)
	}
	fmt.Printf("ok after %d attempts\n", n)
}
