package bench

import (
	"fmt"
	"math"
	"slices"
	"time"
)

// Series is one set of measurements of the same thing, in one unit.
type Series struct {
	// Name says what was measured, e.g. "pertask/noop/bare".
	Name string `json:"name"`
	// Unit of Values: "ns", "tasks/s" or "ns/iter".
	Unit   string    `json:"unit"`
	Values []float64 `json:"values"`
}

// AddDuration appends d in nanoseconds.
func (s *Series) AddDuration(d time.Duration) { s.Values = append(s.Values, float64(d.Nanoseconds())) }

// Quantile returns the q-quantile (0 <= q <= 1) by the nearest-rank
// method, or NaN for an empty series.
func (s *Series) Quantile(q float64) float64 {
	if len(s.Values) == 0 {
		return math.NaN()
	}
	v := slices.Clone(s.Values)
	slices.Sort(v)
	i := int(math.Ceil(q*float64(len(v)))) - 1
	return v[max(0, min(i, len(v)-1))]
}

// Median is the middle value (the mean of the two middle ones for an even
// count), or NaN for an empty series.
func (s *Series) Median() float64 {
	n := len(s.Values)
	if n == 0 || n%2 == 1 {
		return s.Quantile(0.5)
	}
	v := slices.Clone(s.Values)
	slices.Sort(v)
	return (v[n/2-1] + v[n/2]) / 2
}

// P99 is the 0.99 quantile.
func (s *Series) P99() float64 { return s.Quantile(0.99) }

// Max is the largest value (NaN when empty).
func (s *Series) Max() float64 { return s.Quantile(1) }

// N is the number of samples.
func (s *Series) N() int { return len(s.Values) }

// us formats nanoseconds as microseconds.
func us(ns float64) string { return inUnit(ns, 1e3) }

// ms formats nanoseconds as milliseconds.
func ms(ns float64) string { return inUnit(ns, 1e6) }

// num formats a rate or count with no more precision than it has.
func num(v float64) string { return inUnit(v, 1) }

// inUnit formats v/unit with 0, 1 or 2 decimals as it is at least 100, at
// least 10, or less: no more precision than it has.
func inUnit(v, unit float64) string {
	switch {
	case math.IsNaN(v):
		return "n/a"
	case v >= 100*unit:
		return fmt.Sprintf("%.0f", v/unit)
	case v >= 10*unit:
		return fmt.Sprintf("%.1f", v/unit)
	default:
		return fmt.Sprintf("%.2f", v/unit)
	}
}

// ratio formats a/b as "1.23x".
func ratio(a, b float64) string {
	if b == 0 || math.IsNaN(a) || math.IsNaN(b) {
		return "n/a"
	}
	return fmt.Sprintf("%.2fx", a/b)
}

// msFine formats nanoseconds as milliseconds with two decimals.
func msFine(ns float64) string { return fmt.Sprintf("%.2f", ns/1e6) }
