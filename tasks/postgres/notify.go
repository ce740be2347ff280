package postgres

import (
	"context"
	"time"

	"github.com/jackc/pgx/v5"
	"go.uber.org/zap"
)

// Wake-ups are sent after the write that makes a task ready has committed,
// by a goroutine of the Store, in a transaction of their own that does not
// wait for its commit to reach the disk:
//
//   - PostgreSQL serializes the commits of every transaction that
//     notifies, behind one lock of the database held until the commit is
//     flushed. A NOTIFY in Submit's transaction made every submit, of
//     every runner, wait for the fsync of the one before: measured, three
//     runners submitting at once did no more than one (about 300/s, a
//     commit taking about 2.4 ms on the test machine's disk).
//   - A wake-up is a hint (lost ones are covered by polling), so it needs
//     no durability: synchronous_commit off lets the lock go as soon as
//     the commit is written to the WAL buffers.
//   - Writes that come while a wake-up is being sent coalesce into one
//     more, sent after it: at most one in flight per Store, and a burst of
//     submits costs one or two.

// notifyTimeout bounds the sending of one wake-up.
const notifyTimeout = 5 * time.Second

// notify asks for a wake-up to be sent on the schema's channel, after the
// write that calls it (which has committed). It never blocks.
func (s *Store) notify() {
	s.nmu.Lock()
	defer s.nmu.Unlock()
	if s.nclosed {
		return
	}
	s.npending = true
	if s.nsending {
		return
	}
	s.nsending = true
	s.nwg.Add(1)
	go s.sendWakeups()
}

// sendWakeups sends wake-ups until none is pending.
func (s *Store) sendWakeups() {
	defer s.nwg.Done()
	q := `BEGIN; SET LOCAL synchronous_commit TO off; NOTIFY ` + pgx.Identifier{s.channel}.Sanitize() + `; COMMIT`
	for {
		s.nmu.Lock()
		if !s.npending || s.nclosed {
			s.nsending = false
			s.nmu.Unlock()
			return
		}
		s.npending = false
		s.nmu.Unlock()
		ctx, cancel := context.WithTimeout(context.Background(), notifyTimeout)
		if _, err := s.pool.Exec(ctx, q); err != nil {
			s.log.Debug("wake-up not sent; runners find the task at their next poll", zap.Error(s.dbErr("notify", err)))
		}
		cancel()
	}
}

// stopNotify drops the pending wake-ups and waits for the one in flight.
func (s *Store) stopNotify() {
	s.nmu.Lock()
	s.nclosed = true
	s.nmu.Unlock()
	s.nwg.Wait()
}
