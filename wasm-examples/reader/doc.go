// Command reader reads stdin to its end and prints how many bytes it read. In
// the tests its stdin never ends: the sandbox must end the blocked read when
// the task is stopped.
package main
