package main

import (
	"os"
	"os/exec"
	"runtime"
	"strconv"
	"strings"
	"syscall"
	"testing"
)

// warmHeapChildEnv makes TestWarmHeapChild measure, in a process of its
// own: "cold" or "warm".
const warmHeapChildEnv = "STINT_TEST_WARMHEAP_CHILD"

// TestWarmHeapSavesPageFaults checks warmHeap's point: in a fresh process
// with the serve heap floor, allocating 32 MiB faults in far fewer pages
// after warmHeap than without it. It counts page faults (getrusage), not
// time, each in a process of its own, since this one's heap is warm
// already.
func TestWarmHeapSavesPageFaults(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's shadow memory faults on its own")
	}
	if runtime.GOOS != "linux" {
		t.Skip("counts Linux page faults")
	}
	cold, warm := childFaults(t, "cold"), childFaults(t, "warm")
	t.Logf("page faults allocating 32 MiB: %d cold, %d after warmHeap", cold, warm)
	if cold < 2048 {
		t.Skipf("only %d faults without the warm-up: this kernel backs the heap with huge pages already", cold)
	}
	if warm*4 > cold {
		t.Fatalf("warmHeap saved too few faults: %d without it, %d with it", cold, warm)
	}
}

// childFaults runs TestWarmHeapChild in a new process and returns the
// faults it counted.
func childFaults(t *testing.T, mode string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestWarmHeapChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), warmHeapChildEnv+"="+mode)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("child %s: %v: %s", mode, err, out)
	}
	for _, line := range strings.Split(string(out), "\n") {
		if v, ok := strings.CutPrefix(line, "faults "); ok {
			n, err := strconv.ParseInt(v, 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return n
		}
	}
	t.Fatalf("child %s printed no count: %s", mode, out)
	return 0
}

// TestWarmHeapChild is the child of TestWarmHeapSavesPageFaults; it does
// nothing unless warmHeapChildEnv is set.
func TestWarmHeapChild(t *testing.T) {
	mode := os.Getenv(warmHeapChildEnv)
	if mode == "" {
		t.Skip("run by TestWarmHeapSavesPageFaults")
	}
	floor := make([]byte, serveHeapFloor)
	if mode == "warm" {
		warmHeap(serveHeapFloor)
	}
	before := minorFaults(t)
	var held [][]byte
	for range (32 << 20) / 4096 {
		b := make([]byte, 4096)
		b[0] = 1
		held = append(held, b)
	}
	after := minorFaults(t)
	runtime.KeepAlive(held)
	keepHeapFloor(floor)
	os.Stdout.WriteString("faults " + strconv.FormatInt(after-before, 10) + "\n")
}

// minorFaults is this process's minor page faults so far.
func minorFaults(t *testing.T) int64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		t.Fatal(err)
	}
	return ru.Minflt
}
