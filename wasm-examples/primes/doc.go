// Command primes counts the primes below N, in resumable steps.
//
// Stdin is "N" or "N EVERY" (5,000,000 and 50,000 if stdin is empty). The
// guest saves a checkpoint every EVERY numbers and reports its progress; it
// checks for a stop request every 1,000 numbers and, when asked, saves a
// checkpoint and exits 75. A later attempt resumes from the checkpoint. The
// output is the same whether or not the count was interrupted:
//
//	primes below N: C
package main
