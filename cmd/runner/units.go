package main

import (
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"
)

var sizeUnits = []struct {
	suffix string
	mult   int64
}{
	{"GiB", 1 << 30}, {"MiB", 1 << 20}, {"KiB", 1 << 10},
	{"GB", 1e9}, {"MB", 1e6}, {"KB", 1e3}, {"kB", 1e3},
	{"G", 1 << 30}, {"M", 1 << 20}, {"K", 1 << 10}, {"B", 1},
}

// parseSize reads a byte size with an optional unit: "64MiB", "512KiB",
// "1GiB", "10MB", or a plain number of bytes. Units are matched without
// regard to case ("12mb" is 12MB, "64mib" 64MiB). NaN, infinities, negative
// sizes and sizes over 8 EiB are refused, never turned into a wrapped
// number.
func parseSize(s string) (int64, error) {
	t := strings.TrimSpace(s)
	mult := int64(1)
	for _, u := range sizeUnits {
		if len(t) >= len(u.suffix) && strings.EqualFold(t[len(t)-len(u.suffix):], u.suffix) {
			t, mult = strings.TrimSpace(t[:len(t)-len(u.suffix)]), u.mult
			break
		}
	}
	bad := fmt.Errorf("invalid size %q: want a number with an optional unit, like 64MiB, 512KiB or 1048576", s)
	if t == "" || strings.ContainsAny(t, "xXpPnNiI_") { // no hex floats, NaN, Inf or digit separators
		return 0, bad
	}
	n, err := strconv.ParseFloat(t, 64)
	if err != nil || n < 0 || math.IsNaN(n) {
		return 0, bad
	}
	v := n * float64(mult)
	if v >= math.MaxInt64 {
		return 0, fmt.Errorf("invalid size %q: over the largest size, 8EiB", s)
	}
	return int64(v), nil
}

// parseDuration reads Go duration syntax ("30s", "5m"), with whole days
// in front ("7d", "1d12h"); a plain "0" is zero.
func parseDuration(s string) (time.Duration, error) {
	t := strings.TrimSpace(s)
	if t == "0" {
		return 0, nil
	}
	bad := fmt.Errorf("invalid duration %q: want Go syntax like 30s, 5m or 1h30m, or days like 7d", s)
	var days time.Duration
	if i := strings.IndexByte(t, 'd'); i > 0 {
		n, err := strconv.ParseUint(t[:i], 10, 16)
		if err != nil {
			return 0, bad
		}
		days, t = time.Duration(n)*24*time.Hour, t[i+1:]
		if t == "" {
			return days, nil
		}
	}
	d, err := time.ParseDuration(t)
	if err != nil || (days > 0 && d < 0) {
		return 0, bad
	}
	return days + d, nil
}
