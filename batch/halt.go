package batch

import (
	"fmt"
	"strconv"
	"strings"
)

// Halt is when a batch stops itself because inputs failed: GNU parallel's
// --halt. The zero Halt never halts.
type Halt struct {
	// Now stops the running inputs at once (the forced stop: their
	// attempts are recorded as interrupted and they run at the next run);
	// else (soon) no input starts any more and the running ones finish.
	Now bool
	// Fail halts once this many inputs failed in this run (0: not by
	// count).
	Fail int
	// FailPercent halts once this percentage of the inputs that ended in
	// this run failed, at least 3 of them having ended, as parallel does
	// (0: not by percentage).
	FailPercent float64
}

// ParseHalt reads parallel's spelling: "never", "now,fail=N", "soon,fail=N",
// "now,fail=N%", "soon,fail=N%", and parallel's old numbers: 0 (never), 1
// (soon,fail=1), 2 (now,fail=1).
func ParseHalt(s string) (Halt, error) {
	switch s {
	case "", "never", "0":
		return Halt{}, nil
	case "1":
		return Halt{Fail: 1}, nil
	case "2":
		return Halt{Now: true, Fail: 1}, nil
	}
	bad := func(why string) (Halt, error) {
		return Halt{}, fmt.Errorf("--halt %q: %s (want now|soon,fail=N or now|soon,fail=N%%, e.g. now,fail=1 or soon,fail=10%%)", s, why)
	}
	when, cond, ok := strings.Cut(s, ",")
	if !ok {
		return bad("no condition")
	}
	var h Halt
	switch when {
	case "now":
		h.Now = true
	case "soon":
	default:
		return bad("when is now or soon")
	}
	key, val, ok := strings.Cut(cond, "=")
	switch {
	case !ok:
		return bad("the condition is fail=N or fail=N%")
	case key == "success" || key == "done":
		return bad("only fail= is supported")
	case key != "fail":
		return bad("the condition is fail=N or fail=N%")
	}
	if p, isPct := strings.CutSuffix(val, "%"); isPct {
		f, err := strconv.ParseFloat(p, 64)
		if err != nil || f <= 0 || f > 100 {
			return bad("the percentage is more than 0 and at most 100")
		}
		h.FailPercent = f
		return h, nil
	}
	n, err := strconv.Atoi(val)
	if err != nil || n < 1 {
		return bad("the count is 1 or more")
	}
	h.Fail = n
	return h, nil
}

// String is the Halt in parallel's spelling.
func (h Halt) String() string {
	when := "soon"
	if h.Now {
		when = "now"
	}
	switch {
	case h.Fail > 0:
		return fmt.Sprintf("%s,fail=%d", when, h.Fail)
	case h.FailPercent > 0:
		return fmt.Sprintf("%s,fail=%s%%", when, strconv.FormatFloat(h.FailPercent, 'f', -1, 64))
	}
	return "never"
}

// reached reports whether failed of ended inputs (in this run) halt.
func (h Halt) reached(failed, ended int) bool {
	switch {
	case h.Fail > 0:
		return failed >= h.Fail
	case h.FailPercent > 0:
		return ended >= 3 && float64(failed)*100 >= h.FailPercent*float64(ended)
	}
	return false
}
