package shutdown

import "time"

// Clock tells time for the coordinator: every duration it measures and every
// wait it makes goes through it, so tests can drive a stop with a fake clock
// and no sleeps. The default is the system clock.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// After returns a channel that receives the time once d has elapsed.
	// A d <= 0 fires at once. The channel must be buffered (or never
	// block the sender): the coordinator may stop listening before it fires.
	After(d time.Duration) <-chan time.Time
}

// systemClock is the real clock.
type systemClock struct{}

func (systemClock) Now() time.Time                         { return time.Now() }
func (systemClock) After(d time.Duration) <-chan time.Time { return time.After(d) }
