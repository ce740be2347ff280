package stint_test

import (
	"context"
	"fmt"
	"testing"

	"github.com/stretchr/testify/require"

	"github.com/stint-run/stint"
	"github.com/stint-run/stint/internal/testwasm/kvhost"
	"github.com/stint-run/stint/internal/testwasm/wat"
	"github.com/stint-run/stint/sandbox"
	"github.com/stint-run/stint/tasks"
)

// TestQueuedPluginCall: a task that names an export is a plugin call
// through the queue, and may use the host modules the embedder gave the
// runner's sandbox; the host function sees the task's id and labels.
func TestQueuedPluginCall(t *testing.T) {
	t.Parallel()
	seen := make(chan string, 4)
	kv := kvhost.Def(func(_ context.Context, c sandbox.Call, key string) ([]byte, bool, error) {
		seen <- c.Task() + " " + c.Labels()["tenant"] + " " + key
		return []byte("value of " + key), true, nil
	}, false)
	r := openRunner(t, stint.Config{Sandbox: sandbox.Config{HostModules: []sandbox.HostModuleDef{kv}}})
	ctx, cancel := context.WithTimeout(context.Background(), bound)
	defer cancel()
	require.NoError(t, r.Start(ctx))
	sha, err := r.PutModule(ctx, wat.MustLoad("plugin_host"))
	require.NoError(t, err)
	task, _, err := r.Submit(ctx, tasks.Spec{Module: sha, Export: "kv", Input: []byte("answer"), Labels: map[string]string{"tenant": "acme"}})
	require.NoError(t, err)
	done, err := r.Wait(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateSucceeded, done.State, done.LastError)
	require.Equal(t, "value of answer", string(done.Result))
	require.Equal(t, "kv", done.Export)
	require.Equal(t, done.Module, sha)
	require.Equal(t, fmt.Sprint(task.ID)+" acme answer", <-seen)

	// A plugin task without an export cannot run: dead at once, not retried.
	task, _, err = r.Submit(ctx, tasks.Spec{Module: sha})
	require.NoError(t, err)
	done, err = r.Wait(ctx, task.ID)
	require.NoError(t, err)
	require.Equal(t, tasks.StateDead, done.State)
	require.Contains(t, done.LastError, "exports no _start")
}
