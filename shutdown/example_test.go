package shutdown_test

import (
	"context"
	"fmt"
	"sync"

	"github.com/stint-run/stint/shutdown"
)

// pool is a toy worker pool: one job that runs until intake stops.
type pool struct {
	once     sync.Once
	stopped  chan struct{}
	idle     chan struct{}
	mu       sync.Mutex
	finished int
}

func newPool() *pool {
	p := &pool{stopped: make(chan struct{}), idle: make(chan struct{})}
	go func() { // the running job
		<-p.stopped
		p.mu.Lock()
		p.finished++
		p.mu.Unlock()
		close(p.idle)
	}()
	return p
}

func (p *pool) StopIntake()           { p.once.Do(func() { close(p.stopped) }) }
func (p *pool) Idle() <-chan struct{} { return p.idle }
func (p *pool) RequestStop()          {}
func (p *pool) ForceStop()            {}
func (p *pool) Stats() shutdown.Stats {
	p.mu.Lock()
	defer p.mu.Unlock()
	return shutdown.Stats{Running: 1 - p.finished, Finished: p.finished}
}

func Example() {
	c, err := shutdown.New(shutdown.Config{}, shutdown.Options{}) // defaults: 25s budget
	if err != nil {
		panic(err)
	}
	if err := c.Register(newPool()); err != nil {
		panic(err)
	}
	for _, h := range []shutdown.Hook{
		{Name: "close store", Priority: 20, Run: func(context.Context) error {
			fmt.Println("hook: close store")
			return nil
		}},
		{Name: "flush", Priority: 10, Run: func(context.Context) error {
			fmt.Println("hook: flush")
			return nil
		}},
	} {
		if err := c.AddHook(h); err != nil {
			panic(err)
		}
	}

	// In a program: stop := c.HandleSignals(ctx); defer stop(); <-c.Done()
	r := c.Shutdown(context.Background())

	for _, p := range r.Phases {
		fmt.Printf("%-6s skipped=%v\n", p.Phase, p.Skipped)
	}
	fmt.Println("finished:", r.Finished, "forced:", r.Forced, "not ended:", r.NotEnded, "err:", r.Err())
	// Output:
	// hook: flush
	// hook: close store
	// intake skipped=false
	// drain  skipped=false
	// cancel skipped=true
	// force  skipped=true
	// hooks  skipped=false
	// finished: 1 forced: 0 not ended: 0 err: <nil>
}
