// Command flood writes to stdout without end, until the sandbox's output limit
// (or a stop) ends it. Write errors are ignored on purpose.
package main
