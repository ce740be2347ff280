package main

import "syscall"

// adviseHugePages asks the kernel to back b with transparent huge pages
// (where it is set to "madvise"); a refusal changes nothing but the cost
// of the first touch.
func adviseHugePages(b []byte) { _ = syscall.Madvise(b, syscall.MADV_HUGEPAGE) }
