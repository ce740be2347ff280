package main

import (
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
