package sqlite

import (
	"crypto/sha256"
	"encoding/hex"
	"path/filepath"
	"sync"
)

// Wake-ups across processes. A runner working a store learns of a task
// another process submitted (runner submit, another program) at its next
// poll. To start it at once instead, the runner listens for wake-ups on a
// Unix datagram socket named after the store's path (in Linux's abstract
// namespace: no file, no path-length limit), and Submit and Retry send one
// byte there after they commit. Nobody listening, or another OS: nothing
// happens, and the poll still finds the task.

// wakeName is the socket name for the store file at path.
func wakeName(path string) string {
	if abs, err := filepath.Abs(path); err == nil {
		path = abs
	}
	sum := sha256.Sum256([]byte(path))
	return "stint-wake-" + hex.EncodeToString(sum[:16])
}

// waker sends wake-ups for one store, reusing one socket.
type waker struct {
	name  string
	mu    sync.Mutex
	send  func()       // nil until first used
	close func() error // closes the socket send uses
}

// ping tells a runner listening on this store that there is work. It never
// blocks and never fails.
func (w *waker) ping() {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.send == nil {
		w.send, w.close = openSender(w.name)
	}
	w.send()
}

// shutdown closes the sending socket, if one was opened.
func (w *waker) shutdown() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.close == nil {
		return nil
	}
	err := w.close()
	w.send, w.close = func() {}, func() error { return nil }
	return err
}
