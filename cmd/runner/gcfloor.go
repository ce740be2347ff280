package main

import (
	"os"
	"runtime"
)

// serveHeapFloor is the heap a `runner serve` keeps reserved, unless GOGC
// or GOMEMLIMIT is set: its live heap is a few MiB while it runs short
// tasks, so the default GOGC of 100 collected it every few MiB allocated,
// and the collector (marking, sweeping, and the scheduling around it) was
// most of the runner's CPU per task (docs/design/go-runtime.md, "The heap
// floor of runner serve"). A
// noscan block of this size, never written, raises the collector's target
// by as much without touching memory: the kernel backs its pages only if
// written, and the collector does not scan it. A large heap (Go guests'
// linear memory) is collected as before, at twice its size.
const serveHeapFloor = 64 << 20

// heapFloor reserves serveHeapFloor unless the operator set GOGC or
// GOMEMLIMIT (which are then the whole policy); keep the returned value
// alive (runtime.KeepAlive) for as long as the floor should hold.
func heapFloor() []byte {
	if os.Getenv("GOGC") != "" || os.Getenv("GOMEMLIMIT") != "" {
		return nil
	}
	floor := make([]byte, serveHeapFloor)
	go adviseHeap(serveHeapFloor)
	return floor
}

// adviseHeap asks the kernel to back the next n bytes of heap with
// transparent huge pages, and gives them back to the heap, where the next
// allocations find them. With the floor, the collector lets up to about
// its size of garbage build up between two collections, so a runner
// touches that much memory anyway (a batch too: batch.go); in 4 KiB pages
// each faults on first use, while tasks run: on the VM of
// docs/design/go-runtime.md ("A fresh runner's page faults") a fault cost about 10 µs, and a fresh
// runner's first few thousand tasks paid about two and a half times the
// runner CPU of the later ones. In huge pages the same memory costs a few
// dozen faults. Nothing is touched here: an idle runner's memory stays as
// it was (where the kernel's setting is "never", nothing changes at all).
// It runs beside the command's start, on a goroutine of its own.
func adviseHeap(n int) {
	b := make([]byte, n)
	adviseHugePages(b)
	runtime.GC()
}

// keepHeapFloor keeps b reachable until the call.
func keepHeapFloor(b []byte) { runtime.KeepAlive(b) }
