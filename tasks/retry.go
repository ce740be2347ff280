package tasks

import (
	"math/rand/v2"
	"time"
)

// RetryPolicy spaces the attempts of a failing task: exponential backoff
// with jitter, Base * 2^(failures-1), at most Max.
type RetryPolicy struct {
	// Base is the delay after the first failure. Default 1s.
	Base time.Duration
	// Max caps the delay. Default 10m.
	Max time.Duration
	// Jitter spreads each delay by up to this fraction either way, so
	// tasks that failed together do not retry together. Default 0.2.
	Jitter float64
}

// WithDefaults fills zero fields.
func (p RetryPolicy) WithDefaults() RetryPolicy {
	if p.Base <= 0 {
		p.Base = time.Second
	}
	if p.Max <= 0 {
		p.Max = 10 * time.Minute
	}
	if p.Jitter == 0 {
		p.Jitter = 0.2
	}
	return p
}

// Backoff is the delay before the attempt that follows the given number of
// failures (1 for the first).
func (p RetryPolicy) Backoff(failures int) time.Duration {
	d := p.Base
	for i := 1; i < failures && d < p.Max; i++ {
		d *= 2
	}
	d = min(d, p.Max)
	if p.Jitter > 0 {
		d = time.Duration(float64(d) * (1 + p.Jitter*(2*rand.Float64()-1)))
	}
	return max(d, 0)
}
