package gateway_test

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"
)

// benchEnvInt reads a positive integer from the environment variable name, or
// returns def when it is unset; anything else fails tb.
func benchEnvInt(tb testing.TB, name string, def int) int {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil || n <= 0 {
		tb.Fatalf("%s=%q: want a positive integer", name, v)
	}
	return n
}

// benchEnvDuration reads a positive duration (e.g. "2s") from the environment
// variable name, or returns def when it is unset; anything else fails tb.
func benchEnvDuration(tb testing.TB, name string, def time.Duration) time.Duration {
	tb.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil || d <= 0 {
		tb.Fatalf("%s=%q: want a positive duration such as 2s", name, v)
	}
	return d
}

func percentile(sorted []time.Duration, q float64) time.Duration {
	return sorted[int(q*float64(len(sorted)-1)+0.5)]
}

func median(xs []float64) float64 {
	s := slices.Clone(xs)
	slices.Sort(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// benchResult is one path's measurements, one entry per round.
type benchResult struct {
	path    benchPath
	skipped string // why the path did not run; the rest is empty then
	bt      *benchTarget
	p50     []float64 // round p50 latency, ns
	tput    []float64 // round conc8 throughput, calls/s
	p50x    []float64 // round p50 / direct's p50 in the same round
	tputx   []float64 // round throughput / direct's in the same round
	all     []time.Duration
}

// TestGatewayOverhead measures every available path in interleaved rounds and prints
// the side-by-side table. Each round runs every path once, in an order rotated by
// the round: first WARDEN_BENCH_SEQ (default 400) sequential calls per path (that
// round's p50), then WARDEN_BENCH_SLICE (default 1s) of benchConc-concurrent calls
// per path (that round's throughput). After WARDEN_BENCH_ROUNDS (default 5) rounds,
// each absolute figure is the median of its rounds and each ratio the median of its
// rounds' ratios to direct/stdio measured in the same round, so a noisy moment of
// the machine moves one round, not the table.
//
// The table is logged, and written as markdown to the file WARDEN_BENCH_TABLE names
// when set (scripts/bench-gateway.sh prints it), followed by the physical floor (see
// measureFloor). Paths that cannot run here (no PostgreSQL, no mcp-proxy) are rows
// that say why.
func TestGatewayOverhead(t *testing.T) {
	if os.Getenv("WARDEN_BENCH") != "1" {
		t.Skip("set WARDEN_BENCH=1 to measure the gateway's overhead (or run scripts/bench-gateway.sh)")
	}
	rounds := benchEnvInt(t, "WARDEN_BENCH_ROUNDS", 5)
	seqCalls := benchEnvInt(t, "WARDEN_BENCH_SEQ", 400)
	slice := benchEnvDuration(t, "WARDEN_BENCH_SLICE", time.Second)
	benchGC(t)

	var results, live []*benchResult
	for _, p := range benchPaths() {
		r := &benchResult{path: p}
		if p.unavailable != nil {
			r.skipped = p.unavailable()
		}
		if r.skipped == "" {
			r.bt = p.start(t)
			live = append(live, r)
		} else {
			t.Logf("%s: skipped: %s", p.name, r.skipped)
		}
		results = append(results, r)
	}
	direct := results[0] // benchPaths lists direct/stdio first; it needs nothing optional
	ctx := context.Background()

	for round := range rounds {
		for k := range live {
			r := live[(round+k)%len(live)]
			lat := make([]time.Duration, 0, seqCalls)
			for range seqCalls {
				start := time.Now()
				if err := r.bt.call(ctx, 0); err != nil {
					t.Fatal(err)
				}
				lat = append(lat, time.Since(start))
			}
			r.all = append(r.all, lat...)
			slices.Sort(lat)
			r.p50 = append(r.p50, float64(percentile(lat, 0.5)))
		}
		for k := range live {
			r := live[(round+k)%len(live)]
			start := time.Now()
			n, err := r.bt.runConc(0, start.Add(slice))
			if err != nil {
				t.Fatal(err)
			}
			r.tput = append(r.tput, float64(n)/time.Since(start).Seconds())
		}
		for _, r := range live {
			r.p50x = append(r.p50x, r.p50[round]/direct.p50[round])
			r.tputx = append(r.tputx, r.tput[round]/direct.tput[round])
		}
	}

	for _, r := range live {
		slices.Sort(r.all)
		t.Logf("  %-20s p50 %8s  p90 %8s  p99 %8s (all %d calls)  conc%d %6.0f calls/s (median of %d rounds)",
			r.path.name, time.Duration(median(r.p50)).Round(time.Microsecond),
			percentile(r.all, 0.90).Round(time.Microsecond), percentile(r.all, 0.99).Round(time.Microsecond),
			len(r.all), benchConc, median(r.tput), rounds)
	}

	var md strings.Builder
	fmt.Fprintf(&md, "Gateway overhead: %d rounds; per path and round %d sequential calls, then %s of %d concurrent callers. Figures are medians of the rounds; ratios are medians of each round's ratio to direct stdio.\n\n",
		rounds, seqCalls, slice, benchConc)
	writeTable(&md, results, true)
	md.WriteString("\nOther paths:\n\n")
	writeTable(&md, results, false)

	floor := measureFloor(t, results)
	md.WriteString("\n")
	md.WriteString(floor)
	md.WriteString("\nTargets:\n\n| front | target | measured | |\n|---|---|---|---|\n")
	var missed []string
	for _, tg := range overheadGoals {
		i := slices.IndexFunc(results, func(r *benchResult) bool { return r.path.name == tg.path })
		if i < 0 {
			fmt.Fprintf(&md, "| %s | %s | not measured | |\n", tg.path, tg.text())
			continue
		}
		got, ok := tg.check(results[i])
		verdict := "met"
		if !ok {
			verdict = "MISSED"
			missed = append(missed, fmt.Sprintf("%s: %s, measured %s", tg.path, tg.text(), got))
		}
		fmt.Fprintf(&md, "| %s | %s | %s | %s |\n", results[i].path.row, tg.text(), got, verdict)
	}
	t.Log("\n" + md.String())
	if out := os.Getenv("WARDEN_BENCH_TABLE"); out != "" {
		if err := os.WriteFile(out, []byte(md.String()), 0o644); err != nil {
			t.Fatalf("WARDEN_BENCH_TABLE: %v", err)
		}
	}
	if os.Getenv("WARDEN_BENCH_STRICT") == "1" {
		for _, m := range missed {
			t.Errorf("target missed: %s", m)
		}
	}
}

// overheadGoal is one target of the overhead table: a p50 ratio to direct stdio at
// most maxP50, and (when minTput is set) a concurrent throughput ratio at least
// minTput.
type overheadGoal struct {
	path            string
	maxP50, minTput float64
}

// overheadGoals are the gateway's targets: with the default durable SQLite audit p50
// <= 2.0x direct stdio and 8-concurrent throughput >= 60% of direct; with PostgreSQL
// p50 <= 2.5x; with the audit off p50 <= 1.6x.
var overheadGoals = []overheadGoal{
	{path: "gateway/governed", maxP50: 2.0, minTput: 0.6},
	{path: "gateway/postgres", maxP50: 2.5},
	{path: "gateway/auditoff", maxP50: 1.6},
}

func (tg overheadGoal) text() string {
	s := fmt.Sprintf("p50 <= %.1fx", tg.maxP50)
	if tg.minTput > 0 {
		s += fmt.Sprintf(", conc%d >= %.0f%%", benchConc, 100*tg.minTput)
	}
	return s
}

// check returns what r measured against tg, and whether tg is met.
func (tg overheadGoal) check(r *benchResult) (string, bool) {
	p50, tput := median(r.p50x), median(r.tputx)
	got := fmt.Sprintf("%.2fx", p50)
	ok := p50 <= tg.maxP50
	if tg.minTput > 0 {
		got += fmt.Sprintf(", %.0f%%", 100*tput)
		ok = ok && tput >= tg.minTput
	}
	return got, ok
}

// writeTable writes the rows of results whose path's main is main as a markdown
// table.
func writeTable(w *strings.Builder, results []*benchResult, main bool) {
	fmt.Fprintf(w, "| front | p50 vs direct stdio | %d-concurrent throughput vs direct | p50 | %d-concurrent calls/s |\n", benchConc, benchConc)
	w.WriteString("|---|---|---|---|---|\n")
	for _, r := range results {
		if r.path.main != main {
			continue
		}
		if r.skipped != "" {
			fmt.Fprintf(w, "| %s | skipped: %s | | | |\n", r.path.row, r.skipped)
			continue
		}
		fmt.Fprintf(w, "| %s | %.2fx | %.0f%% | %s | %.0f |\n", r.path.row, median(r.p50x), 100*median(r.tputx),
			time.Duration(median(r.p50)).Round(time.Microsecond), median(r.tput))
	}
}
