// Command sleeper sleeps for an hour (WASI poll_oneoff with a clock
// subscription): the sandbox must end the sleep when the task is stopped.
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
