package audit_test

// Benchmarks of audited calls: a Guard with audit.NewJournal on each store, called by
// 16 goroutines at once. Each reports calls/s (throughput with 16 concurrent callers),
// p50-ns (the median latency of one audited call) and added-p50-ns (that median minus
// the median of the same Guard without a journal, measured the same way). Each store
// runs twice: end=sync makes every entry durable before the call returns, end=later
// (Options.Deferred, the gateway's journal) only the intent. Targets on the project's
// 2-core machine, for end=later: SQLite >= 25,000 calls/s, PostgreSQL >= 10,000.
//
//	go test ./audit -run '^$' -bench AuditedCalls -benchtime 20000x
//	WARDEN_TEST_POSTGRES_DSN=postgres://... go test ./audit -run '^$' -bench AuditedCalls/postgres -benchtime 20000x

import (
	"context"
	"fmt"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
)

// benchCallers is the number of concurrent callers.
const benchCallers = 16

func BenchmarkAuditedCalls(b *testing.B) {
	for _, k := range storeKinds {
		for _, deferred := range []bool{false, true} {
			name := k.name + "/end=sync"
			if deferred {
				name = k.name + "/end=later" // the gateway's journal
			}
			b.Run(name, func(b *testing.B) { benchAuditedCalls(b, k.dsn(b), deferred) })
		}
	}
}

// benchAuditedCalls is one BenchmarkAuditedCalls: the journal on the store at dsn,
// with Options.Deferred as given.
func benchAuditedCalls(b *testing.B, dsn string, deferred bool) {
	var runs atomicCounter
	plain := newGuard(b, nil, countingTool("lookup", &runs))
	base := p50(runCalls(plain, 4000, "base"))

	s := openStore(b, dsn)
	j := audit.NewJournal(s, &audit.Options{Deferred: deferred})
	g := newGuard(b, j, countingTool("lookup", &runs))
	b.ReportAllocs()
	b.ResetTimer()
	start := time.Now()
	lat := runCalls(g, b.N, "c")
	elapsed := time.Since(start)
	b.StopTimer()

	med := p50(lat)
	b.ReportMetric(float64(b.N)/elapsed.Seconds(), "calls/s")
	b.ReportMetric(float64(med.Nanoseconds()), "p50-ns")
	b.ReportMetric(float64((med - base).Nanoseconds()), "added-p50-ns")
	if err := j.Flush(context.Background()); err != nil {
		b.Fatalf("flushing the deferred entries: %v", err)
	}
}

// runCalls makes n calls through g from benchCallers goroutines and returns every
// call's latency. It panics on a call that does not run: a benchmark of refusals would
// measure nothing.
func runCalls(g *warden.Guard, n int, prefix string) []time.Duration {
	ctx := context.Background()
	args := warden.MustParseArgs(`{"action":"get","id":"42"}`)
	var next atomic.Int64
	lat := make([][]time.Duration, benchCallers)
	var wg sync.WaitGroup
	for w := range benchCallers {
		wg.Go(func() {
			mine := make([]time.Duration, 0, n/benchCallers+1)
			for {
				i := next.Add(1)
				if i > int64(n) {
					break
				}
				c := warden.Call{ID: fmt.Sprintf("%s-%d", prefix, i), Tool: "lookup", Args: args, Identity: warden.Identity{Principal: "bench"}}
				t0 := time.Now()
				o, err := g.Call(ctx, c)
				mine = append(mine, time.Since(t0))
				if err != nil || o.Status != warden.StatusRan {
					panic(fmt.Sprintf("call %s: %s %v %s", c.ID, o.Status, err, o.ModelText))
				}
			}
			lat[w] = mine
		})
	}
	wg.Wait()
	return slices.Concat(lat...)
}

func p50(d []time.Duration) time.Duration {
	if len(d) == 0 {
		return 0
	}
	slices.Sort(d)
	return d[len(d)/2]
}
