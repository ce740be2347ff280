//go:build !linux

package main

// adviseHugePages does nothing where huge pages are not asked for.
func adviseHugePages([]byte) {}
