// Command stuck spins forever and ignores stop requests: only a forced stop
// ends it.
package main
