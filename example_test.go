package stint_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// Embedding Stint: open a store by URL, start, submit, wait, and follow
// the attempts' events.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stint-example")
	defer os.RemoveAll(dir)

	// Open recovers, at once and not counted, what a crashed previous
	// process of this runner left running (see ExampleOpen_recovery).
	r, err := stint.Open(ctx, stint.Config{
		Store:   "sqlite:" + filepath.Join(dir, "stint.db"), // or postgres://...
		Sandbox: sandbox.Config{CacheDir: filepath.Join(dir, "cache")},
	})
	if err != nil {
		panic(err)
	}
	defer r.Close(ctx) // or register r and r.Hooks() with a shutdown.Coordinator
	events, _ := r.Subscribe()
	if err := r.Start(ctx); err != nil {
		panic(err)
	}

	sha, _ := r.PutModule(ctx, wat.MustLoad("echo")) // any WASI command module
	task, _, _ := r.Submit(ctx, tasks.Spec{Module: sha, Input: []byte("hello from a sandbox")})
	done, _ := r.Wait(ctx, task.ID)
	fmt.Println(done.State, string(done.Result))
	for e := range events {
		fmt.Println("event:", e.Kind)
		if e.Kind == stint.EventEnded {
			fmt.Println("outcome:", e.Attempt.Outcome)
			break
		}
	}
	// Output:
	// succeeded hello from a sandbox
	// event: started
	// event: ended
	// outcome: succeeded
}

// Crash recovery: a process that dies (kill -9) while its attempt runs
// leaves the task running in the store. The next Open of the same store
// (SQLite; on PostgreSQL, with the same Owner) puts it back in the queue at
// once, its attempt recorded as lost and not counted, instead of after its
// lease and counted.
func ExampleOpen_recovery() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stint-example")
	defer os.RemoveAll(dir)
	cfg := stint.Config{
		Store:   "sqlite:" + filepath.Join(dir, "stint.db"),
		Sandbox: sandbox.Config{CacheDir: filepath.Join(dir, "cache")},
	}

	// The crash, simulated: the task is claimed under this runner's owner,
	// and the runner goes away without recording an end.
	r, err := stint.Open(ctx, cfg)
	if err != nil {
		panic(err)
	}
	sha, _ := r.PutModule(ctx, wat.MustLoad("echo"))
	task, _, _ := r.Submit(ctx, tasks.Spec{Module: sha, Input: []byte("resumed"), MaxAttempts: 1})
	_, _ = r.Store().Claim(ctx, tasks.ClaimRequest{Owner: r.Owner(), Max: 1, Lease: time.Hour})
	_ = r.Close(ctx)

	r, err = stint.Open(ctx, cfg)
	if err != nil {
		panic(err)
	}
	defer r.Close(ctx)
	fmt.Println("recovered:", r.Recovered())
	_ = r.Start(ctx)
	done, _ := r.Wait(ctx, task.ID)
	atts, _ := r.Attempts(ctx, task.ID)
	fmt.Println(done.State, string(done.Result))
	fmt.Println("first attempt:", atts[0].Outcome, "counted:", atts[0].Counted)
	// Output:
	// recovered: 1
	// succeeded resumed
	// first attempt: lost counted: false
}
