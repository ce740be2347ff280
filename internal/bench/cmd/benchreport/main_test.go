package main

import (
	"io"
	"os"
	"strings"
	"testing"
)

func TestReplaceBlock(t *testing.T) {
	page := []byte("head\n<!-- bench:a begin -->\nold\n<!-- bench:a end -->\ntail\n")
	got, err := ReplaceBlock(page, "a", "new 1.0x\n")
	if err != nil {
		t.Fatal(err)
	}
	if want := "head\n<!-- bench:a begin -->\nnew 1.0x\n<!-- bench:a end -->\ntail\n"; string(got) != want {
		t.Errorf("got %q, want %q", got, want)
	}
	again, err := ReplaceBlock(got, "a", "new 1.0x\n")
	if err != nil || string(again) != string(got) {
		t.Errorf("a second run changed the page: %q, %v", again, err)
	}
	for name, bad := range map[string]string{
		"missing":  "no markers",
		"repeated": "<!-- bench:a begin --><!-- bench:a end --><!-- bench:a begin --><!-- bench:a end -->",
		"reversed": "<!-- bench:a end --> x <!-- bench:a begin -->",
	} {
		if _, err := ReplaceBlock([]byte(bad), "a", "x"); err == nil || !strings.Contains(err.Error(), "bench:a") && !strings.Contains(err.Error(), "block a") {
			t.Errorf("%s: err %v, want one naming the block", name, err)
		}
	}
}

func TestRenderDemotesHeadings(t *testing.T) {
	b := &Block{Markdown: "## 1. Per-task cost\n\n#### Table\n| a |\n"}
	out := b.render("abc1234")
	if !strings.Contains(out, "\n#### 1. Per-task cost\n") || !strings.Contains(out, "\n#### Table\n") || !strings.Contains(out, "| commit | abc1234 |") {
		t.Errorf("render:\n%s", out)
	}
}

func TestPickOptional(t *testing.T) {
	names := func(ss []step) string {
		var n []string
		for _, s := range ss {
			n = append(n, s.Name)
		}
		return strings.Join(n, ",")
	}
	for _, c := range []struct {
		only     string
		optional bool
		want     string
	}{
		{"", false, "floor,stint,snapshots,peers,plugins"},
		{"", true, "floor,stint,snapshots,peers,plugins,queues"},
		{"snapshots", false, "snapshots"},
		{"queues", false, "queues"},
		{"peers, floor", false, "peers,floor"},
	} {
		got, err := pick(c.only, c.optional)
		if err != nil || names(got) != c.want {
			t.Errorf("pick(%q, %v) = %s, %v; want %s", c.only, c.optional, names(got), err, c.want)
		}
	}
	if _, err := pick("nope", false); err == nil || !strings.Contains(err.Error(), "queues") {
		t.Errorf("pick(nope): %v, want an error listing the blocks", err)
	}
}

func TestQueuesNeedsPostgres(t *testing.T) {
	t.Setenv("STINT_TEST_POSTGRES", "")
	t.Chdir("../../../..") // the repository root
	err := run([]string{"-only", "queues", "-out", t.TempDir()}, io.Discard)
	if err == nil || !strings.Contains(err.Error(), "STINT_TEST_POSTGRES") {
		t.Errorf("run -only queues without STINT_TEST_POSTGRES: %v, want an error naming it", err)
	}
}

// TestPageHasEveryBlock checks that docs/benchmarks.md has the markers of
// every step, once each and in order, so that no run fails on them.
func TestPageHasEveryBlock(t *testing.T) {
	page, err := os.ReadFile("../../../../docs/benchmarks.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range steps {
		if _, err := ReplaceBlock(page, s.Name, ""); err != nil {
			t.Error(err)
		}
	}
}
