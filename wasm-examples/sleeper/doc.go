// Command sleeper sleeps for an hour (WASI poll_oneoff with a clock
// subscription): the sandbox must end the sleep when the task is stopped.
package main
