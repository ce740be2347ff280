package pool_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/pool"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
	"github.com/stint-run/stint/tasks/sqlite"
)

// Embedding the durable runner: open a store, build a pool, submit, wait,
// stop.
func Example() {
	ctx := context.Background()
	dir, _ := os.MkdirTemp("", "stint-example")
	defer os.RemoveAll(dir)

	store, err := sqlite.Open(ctx, filepath.Join(dir, "stint.db"), sqlite.Options{Exclusive: true})
	if err != nil {
		panic(err)
	}
	defer store.Close()
	rt, err := sandbox.New(ctx, sandbox.Config{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		panic(err)
	}
	defer rt.Close(ctx)
	pl, err := pool.New(store, rt, pool.Config{Workers: 2})
	if err != nil {
		panic(err)
	}
	_ = pl.Start(ctx)
	defer pl.Stop(ctx)

	sha, _ := store.PutModule(ctx, wat.MustLoad("echo")) // any WASI command module
	task, _, _ := pl.Submit(ctx, tasks.Spec{Module: sha, Input: []byte("hello from a sandbox")})
	done, _ := pl.Wait(ctx, task.ID)
	fmt.Println(done.State, string(done.Result))
	// Output: succeeded hello from a sandbox
}
