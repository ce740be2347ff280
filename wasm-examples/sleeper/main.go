package main

import (
	"fmt"
	"os"
	"time"
)

func main() {
	fmt.Fprintln(os.Stderr, "sleeper: sleeping")
	time.Sleep(time.Hour)
	fmt.Println("sleeper: woke up")
}
