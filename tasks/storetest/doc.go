// Package storetest is the conformance suite of tasks.Store: every backend
// runs Run from its own tests, against a real database, so that the worker
// pool can rely on one behaviour whatever the backend.
//
//	func TestConformance(t *testing.T) {
//		storetest.Run(t, func(t *testing.T, now func() time.Time) tasks.Store {
//			s, err := sqlite.Open(t.Context(), filepath.Join(t.TempDir(), "stint.db"),
//				sqlite.Options{Now: now})
//			require.NoError(t, err)
//			t.Cleanup(func() { require.NoError(t, s.Close()) })
//			return s
//		})
//	}
//
// The suite drives time through a Clock (the store's Options.Now): it never
// sleeps and asserts no timings, so it is deterministic under -race and on
// slow machines. (The Waker section waits for wake-ups on their channel,
// with a bound that only ends a test that would hang.)
//
// Its tests are in sections by topic, a file each (storetest.go lists
// them): Submit, SubmitMany, Claim, Fair, Leases, Checkpoints, Completion,
// Listing, then sections for the methods of tasks.Store that were once
// optional interfaces, still named after them so that the tests keep
// their names (Summarizer, Operator, BatchActor, ModuleNamer, Pruner,
// Snapshotter, RunningRecoverer, Waker, RunnerRegistry, ScheduleStore),
// and one for each optional interface of tasks that remains (OwnRecoverer,
// Pinger, LockInspector; SubmitMany's SubmitManyClaimed tests
// ClaimingSubmitter), whose tests skip, saying so, on a store that does
// not implement it.
package storetest
