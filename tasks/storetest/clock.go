package storetest

import (
	"sync"
	"time"
)

// Start is the time every Clock of Run starts at.
var Start = time.Date(2030, time.January, 2, 3, 4, 5, 0, time.UTC)

// Clock is a manual clock, safe for concurrent use: it stands still until
// Advance or Set moves it. Pass its Now method as a store's clock.
type Clock struct {
	mu sync.Mutex
	t  time.Time
}

// NewClock returns a clock standing at t.
func NewClock(t time.Time) *Clock { return &Clock{t: t} }

// Now returns the clock's time.
func (c *Clock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

// Advance moves the clock forward by d and returns the new time.
func (c *Clock) Advance(d time.Duration) time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = c.t.Add(d)
	return c.t
}

// Set moves the clock to t.
func (c *Clock) Set(t time.Time) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.t = t
}
