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

// adviseHeapChildEnv makes TestAdviseHeapChild measure, in a process of its
// own: "cold" or "advised".
const adviseHeapChildEnv = "STINT_TEST_ADVISEHEAP_CHILD"

// TestAdviseHeapSavesPageFaults checks adviseHeap's point: in a fresh
// process with the serve heap floor, allocating 32 MiB faults in far fewer
// pages after adviseHeap than without it. It counts page faults
// (getrusage), not time, each in a process of its own, since this one's
// heap has been used already.
func TestAdviseHeapSavesPageFaults(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("counts Linux page faults")
	}
	// Only "madvise" makes the advice matter: "never" refuses huge pages,
	// "always" gives them to the heap unasked.
	if thp, err := os.ReadFile("/sys/kernel/mm/transparent_hugepage/enabled"); err != nil || !strings.Contains(string(thp), "[madvise]") {
		t.Skipf("transparent huge pages are not on request here (%q, %v)", thp, err)
	}
	cold, advised := childFaults(t, "cold"), childFaults(t, "advised")
	t.Logf("page faults allocating 32 MiB: %d cold, %d after adviseHeap", cold, advised)
	// 32 MiB is 8,192 pages of 4 KiB; the advice should save most of
	// their faults. Counted as a difference, since under the race
	// detector both children also fault in its shadow memory, as many.
	const pages = (32 << 20) / 4096
	if saved := cold - advised; saved < pages*3/4 {
		t.Fatalf("adviseHeap saved %d page faults of %d pages: %d without it, %d with it", saved, pages, cold, advised)
	}
}

// childFaults runs TestAdviseHeapChild in a new process and returns the
// faults it counted.
func childFaults(t *testing.T, mode string) int64 {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestAdviseHeapChild$", "-test.count=1")
	cmd.Env = append(os.Environ(), adviseHeapChildEnv+"="+mode)
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

// TestAdviseHeapChild is the child of TestAdviseHeapSavesPageFaults; it does
// nothing unless adviseHeapChildEnv is set.
func TestAdviseHeapChild(t *testing.T) {
	mode := os.Getenv(adviseHeapChildEnv)
	if mode == "" {
		t.Skip("run by TestAdviseHeapSavesPageFaults")
	}
	floor := make([]byte, serveHeapFloor)
	if mode == "advised" {
		adviseHeap(serveHeapFloor)
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
