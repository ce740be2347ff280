package storetest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/stint-run/stint/tasks"
)

// BenchSubmitBatch is the number of tasks BenchmarkSubmitMany submits per
// iteration, one call or one Submit each.
const BenchSubmitBatch = 1000

// BenchmarkSubmitMany measures the submit of BenchSubmitBatch tasks (a
// 64-byte input and an idempotency key each, as `runner batch` submits
// them) per iteration on the store s (with the module h stored): one
// Submit each ("submit") against one SubmitMany ("submitmany"),
// reporting tasks/s. Run it with -count to interleave the two.
func BenchmarkSubmitMany(b *testing.B, s tasks.Store, h string) {
	ctx := context.Background()
	input := make([]byte, 64)
	n := 0
	specs := func() []tasks.Spec {
		out := make([]tasks.Spec, BenchSubmitBatch)
		for i := range out {
			n++
			out[i] = tasks.Spec{Module: h, Input: input, IdempotencyKey: fmt.Sprintf("bench-%s-%d", b.Name(), n)}
		}
		return out
	}
	b.Run("submit", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			batch := specs()
			start := time.Now()
			for _, spec := range batch {
				if _, _, err := s.Submit(ctx, spec); err != nil {
					b.Fatal(err)
				}
			}
			d += time.Since(start)
		}
		b.ReportMetric(float64(b.N*BenchSubmitBatch)/d.Seconds(), "tasks/s")
	})
	b.Run("submitmany", func(b *testing.B) {
		var d time.Duration
		for b.Loop() {
			batch := specs()
			start := time.Now()
			if _, err := tasks.SubmitMany(ctx, s, batch); err != nil {
				b.Fatal(err)
			}
			d += time.Since(start)
		}
		b.ReportMetric(float64(b.N*BenchSubmitBatch)/d.Seconds(), "tasks/s")
	})
}
