package storetest

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// BenchmarkAuditedCalls measures what governing a tool call costs in the store: one
// audited call is a BeginCall (the write-ahead intent, committed before the tool may run)
// followed by an EndCall that waits for its commit. callers goroutines run b.N calls
// between them, each call right after the previous one of its goroutine.
//
// It reports calls/s (the throughput of the whole group), and p50-ms and p99-ms: the
// latency of one audited call under that load. ns/op is the wall time per call for the
// group, the inverse of calls/s.
func BenchmarkAuditedCalls(b *testing.B, s store.Store, callers int) {
	benchmarkCalls(b, s, callers, false)
}

// BenchmarkAuditedCallsLater is [BenchmarkAuditedCalls] with the completion deferred,
// as the call path pays it: a BeginCall, then an EndCallLater that returns once the
// completion is queued (it commits with the next BeginCall). The time includes a final
// Flush, so every completion is committed; a failed completion fails the benchmark.
func BenchmarkAuditedCallsLater(b *testing.B, s store.Store, callers int) {
	benchmarkCalls(b, s, callers, true)
}

func benchmarkCalls(b *testing.B, s store.Store, callers int, later bool) {
	ctx := context.Background()
	args := warden.MustParseArgs(`{"command":"ls -la /tmp","timeout":30}`)
	rec := store.CallRecord{
		Session: "bench", Tool: "shell", Identity: warden.Identity{Tenant: "acme", Principal: "alice"},
		ArgsDigest: args.Digest(), Args: args.AppendJSON(nil), Stage: warden.StageExecute,
		Effect: "allow", RuleID: "shell.allow", Revision: "rev-1", Executed: true,
	}
	done := store.Completion{Status: warden.StatusRan, Duration: time.Millisecond, ResultSize: 512}

	b.ReportAllocs()
	var next atomic.Int64
	lat := make([][]time.Duration, callers)
	var failed atomic.Value
	var wg sync.WaitGroup
	b.ResetTimer()
	start := time.Now()
	for w := range callers {
		wg.Go(func() {
			r := rec
			for i := next.Add(1); i <= int64(b.N); i = next.Add(1) {
				t0 := time.Now()
				r.CallID = fmt.Sprint(w, "-", i)
				ref, err := s.BeginCall(ctx, r)
				switch {
				case err == nil && later:
					err = s.EndCallLater(ctx, ref, done, nil) // failures reach Flush
				case err == nil:
					err = s.EndCall(ctx, ref, done)
				}
				if err != nil {
					failed.Store(err)
					return
				}
				lat[w] = append(lat[w], time.Since(t0))
			}
		})
	}
	wg.Wait()
	ferr := s.Flush(ctx)
	elapsed := time.Since(start)
	b.StopTimer()
	if err, _ := failed.Load().(error); err != nil {
		b.Fatal(err)
	}
	if ferr != nil {
		b.Fatal(ferr)
	}
	all := slices.Concat(lat...)
	slices.Sort(all)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(all[len(all)/2])/float64(time.Millisecond), "p50-ms")
	b.ReportMetric(float64(all[len(all)*99/100])/float64(time.Millisecond), "p99-ms")
}
