package sandbox

import (
	"errors"
	"sync"
)

// maxCompiles is how many compilations run at once in a Runtime (each on
// Config.CompilationWorkers goroutines): the others wait for their turn.
const maxCompiles = 2

// errAbandoned ends a compilation that every caller gave up on while it
// waited for its turn: it is dropped, not compiled.
var errAbandoned = errors.New("sandbox: compilation abandoned before it started")

// compileGate admits a Runtime's compilations: at most maxCompiles at
// once (a turn covers the preparation and wazero's compilation), and
// wazero's compilations only while their estimated memory, together, is
// within Config.CompileMemory, so that two compilations' budgets never
// add up. A compilation alone always fits: one estimated over the limit
// is refused before it asks (compileMemory).
type compileGate struct {
	limit  int64         // Config.CompileMemory; negative: none
	closed chan struct{} // closed by Runtime.Close: waiting compilations end with ErrClosed

	mu       sync.Mutex
	turns    int           // compilations holding a turn
	reserved int64         // estimated memory of those in wazero
	waiting  int           // compilations waiting for a turn or for memory
	changed  chan struct{} // closed, and dropped, when a turn or memory is given back
	onWait   func()        // test hook: a compilation started to wait
}

func newCompileGate(limit int64) compileGate {
	return compileGate{limit: limit, closed: make(chan struct{})}
}

// enter waits for a turn, or until abandon or the gate is closed.
func (g *compileGate) enter(abandon <-chan struct{}) error {
	return g.await(func() bool { return g.turns < maxCompiles }, func() { g.turns++ }, abandon)
}

// leave gives back a turn.
func (g *compileGate) leave() {
	g.mu.Lock()
	g.turns--
	g.changedLocked()
	g.mu.Unlock()
}

// fits reports whether n bytes more fit the limit. Called with g.mu held.
func (g *compileGate) fits(n int64) bool {
	return g.limit < 0 || g.reserved == 0 || g.reserved+n <= g.limit
}

// tryReserve reserves n bytes if they fit now.
func (g *compileGate) tryReserve(n int64) bool {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.fits(n) {
		return false
	}
	g.reserved += n
	return true
}

// reserve waits until n bytes fit, and reserves them; or until abandon
// or the gate is closed.
func (g *compileGate) reserve(n int64, abandon <-chan struct{}) error {
	return g.await(func() bool { return g.fits(n) }, func() { g.reserved += n }, abandon)
}

// release gives back n reserved bytes.
func (g *compileGate) release(n int64) {
	g.mu.Lock()
	g.reserved -= n
	g.changedLocked()
	g.mu.Unlock()
}

// await waits until ok (called with g.mu held) holds, then calls take
// under the same lock; or ends when abandon or g.closed is closed.
func (g *compileGate) await(ok func() bool, take func(), abandon <-chan struct{}) error {
	g.mu.Lock()
	waited := false
	for !ok() {
		if !waited {
			waited = true
			g.waiting++
			if g.onWait != nil {
				g.onWait()
			}
		}
		if g.changed == nil {
			g.changed = make(chan struct{})
		}
		changed := g.changed
		g.mu.Unlock()
		var err error
		select {
		case <-changed:
		case <-abandon:
			err = errAbandoned
		case <-g.closed:
			err = ErrClosed
		}
		g.mu.Lock()
		if err != nil {
			g.waiting--
			g.mu.Unlock()
			return err
		}
	}
	if waited {
		g.waiting--
	}
	take()
	g.mu.Unlock()
	return nil
}

// changedLocked wakes the compilations that wait. Called with g.mu held.
func (g *compileGate) changedLocked() {
	if g.changed != nil {
		close(g.changed)
		g.changed = nil
	}
}

// waitingNow is how many compilations wait (Stats.CompileWaiting).
func (g *compileGate) waitingNow() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.waiting
}
