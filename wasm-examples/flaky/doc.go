// Command flaky fails its first attempts and then succeeds, counting its
// attempts in its checkpoint (which the runner keeps across failed attempts).
//
// K is read from stdin as a decimal number (3 if stdin is empty). Attempt N
// (from 1) saves N as the checkpoint; if N < K it prints
// "flaky: failing attempt N" on stderr and exits 1, else it prints
// "ok after N attempts" on stdout and exits 0.
package main
