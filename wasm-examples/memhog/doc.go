// Command memhog allocates memory without end, 1 MiB at a time, touching every
// page, until the sandbox's memory limit stops it (the Go runtime then dies
// with "out of memory", exit 2).
package main
