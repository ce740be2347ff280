package testutil

import (
	"strings"
	"sync"

	"go.uber.org/zap"
	"go.uber.org/zap/zapcore"
	"go.uber.org/zap/zaptest/observer"
)

// LogWatch is a logger's entries, which a test can wait for (Next) and
// read (Logs).
type LogWatch struct {
	// Logs holds every entry logged, from debug up.
	Logs *observer.ObservedLogs
	mu   sync.Mutex
	subs map[string]chan struct{}
}

// NewLogWatch returns a logger and the watch of what it logs.
func NewLogWatch() (*zap.Logger, *LogWatch) {
	core, logs := observer.New(zapcore.DebugLevel)
	lw := &LogWatch{Logs: logs, subs: map[string]chan struct{}{}}
	return zap.New(zapcore.RegisterHooks(core, lw.hook)), lw
}

func (lw *LogWatch) hook(e zapcore.Entry) error {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	for sub, ch := range lw.subs {
		if strings.Contains(e.Message, sub) {
			close(ch)
			delete(lw.subs, sub)
		}
	}
	return nil
}

// Next returns a channel closed at the next entry whose message contains
// sub (call it before the action that logs).
func (lw *LogWatch) Next(sub string) <-chan struct{} {
	lw.mu.Lock()
	defer lw.mu.Unlock()
	ch := make(chan struct{})
	lw.subs[sub] = ch
	return ch
}
