// Command reader reads stdin to its end and prints how many bytes it read. In
// the tests its stdin never ends: the sandbox must end the blocked read when
// the task is stopped.
package main

import (
	"fmt"
	"io"
	"os"
)

func main() {
	fmt.Fprintln(os.Stderr, "reader: reading")
	in, err := io.ReadAll(os.Stdin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "reader:", err)
		os.Exit(1)
	}
	fmt.Println(len(in))
}
