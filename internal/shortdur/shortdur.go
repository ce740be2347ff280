// Package shortdur is the one way this module prints a duration for
// people and its configuration: in Go syntax without zero tails (1m, not
// 1m0s; 12h, not 12h0m0s).
package shortdur

import (
	"strings"
	"time"
)

// Format prints d in Go syntax without zero minutes and seconds: 1m, not
// 1m0s; 12h, not 12h0m0s; zero is "0".
func Format(d time.Duration) string {
	if d == 0 {
		return "0"
	}
	s := d.String()
	if strings.HasSuffix(s, "m0s") {
		s = strings.TrimSuffix(s, "0s")
	}
	if strings.HasSuffix(s, "h0m") {
		s = strings.TrimSuffix(s, "0m")
	}
	return s
}
