package main

import (
	"bytes"
	"os"
)

func main() {
	line := []byte("flood flood flood flood flood flood flood flood flood flood flood\n")
	buf := bytes.Repeat(line, 64<<10/len(line))
	for {
		_, _ = os.Stdout.Write(buf)
	}
}
