package gateway_test

// The physical floor under the gateway's latency: what one durable commit, one hop
// through a proxy, and one start of a Go program cost on this machine, whatever the
// code above them does.

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// syncLatencies writes a 4 KiB block at the start of a file in dir n times, each write
// followed by dataSync, and returns each pair's latency, sorted. Overwriting in place
// is the cheapest durable write a commit can make (no size change, no new block), so
// this is a floor for the audit log's synchronous=FULL commit, which syncs at least
// once.
func syncLatencies(tb testing.TB, dir string, n int) []time.Duration {
	tb.Helper()
	f, err := os.Create(filepath.Join(dir, "sync-floor"))
	if err != nil {
		tb.Fatal(err)
	}
	defer f.Close()
	block := make([]byte, 4096)
	if _, err := f.WriteAt(block, 0); err != nil {
		tb.Fatal(err)
	}
	if err := dataSync(f); err != nil {
		tb.Fatalf("%s %s: %v", dataSyncName, f.Name(), err)
	}
	lat := make([]time.Duration, 0, n)
	for i := range n {
		block[0] = byte(i)
		start := time.Now()
		if _, err := f.WriteAt(block, 0); err != nil {
			tb.Fatal(err)
		}
		if err := dataSync(f); err != nil {
			tb.Fatalf("%s %s: %v", dataSyncName, f.Name(), err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat
}

// buildHello builds a minimal Go program (its main returns at once) into a directory
// of tb's and returns its path.
func buildHello(tb testing.TB) string {
	tb.Helper()
	dir := tb.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), []byte("module hello\n\ngo 1.22\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "main.go"), []byte("package main\n\nfunc main() {}\n"), 0o644); err != nil {
		tb.Fatal(err)
	}
	bin := filepath.Join(dir, "hello")
	cmd := exec.Command("go", "build", "-o", bin, ".")
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off", "GOFLAGS=-buildvcs=false")
	if out, err := cmd.CombinedOutput(); err != nil {
		tb.Fatalf("building a minimal Go program in %s: %v\n%s", dir, err, out)
	}
	return bin
}

// startLatencies runs bin n times, waiting for each to exit, and returns each run's
// wall time (fork, exec, the Go runtime's start, exit, wait), sorted.
func startLatencies(tb testing.TB, bin string, n int) []time.Duration {
	tb.Helper()
	lat := make([]time.Duration, 0, n)
	for range n {
		start := time.Now()
		if err := exec.Command(bin).Run(); err != nil {
			tb.Fatalf("running %s: %v", bin, err)
		}
		lat = append(lat, time.Since(start))
	}
	slices.Sort(lat)
	return lat
}

// measureFloor measures the physical floor and returns it as a markdown section:
// WARDEN_BENCH_FSYNCS (default 2000) syncs in a temporary directory like the one the
// benchmark's SQLite store uses, the p50s of the bare proxy and of direct stdio from
// results (the rounds of TestGatewayOverhead), and WARDEN_BENCH_STARTS (default 50)
// starts of a minimal Go program.
func measureFloor(t *testing.T, results []*benchResult) string {
	t.Helper()
	syncs := benchEnvInt(t, "WARDEN_BENCH_FSYNCS", 2000)
	starts := benchEnvInt(t, "WARDEN_BENCH_STARTS", 50)
	dir := t.TempDir()
	sl := syncLatencies(t, dir, syncs)
	st := startLatencies(t, buildHello(t), starts)

	var w strings.Builder
	w.WriteString("Physical floor:\n\n| floor | p50 | p90 |\n|---|---|---|\n")
	fmt.Fprintf(&w, "| 4 KiB overwrite + %s, %d times, in a new directory under %s, as the SQLite store's | %s | %s |\n", dataSyncName, syncs, os.TempDir(),
		percentile(sl, 0.5).Round(time.Microsecond), percentile(sl, 0.9).Round(time.Microsecond))
	for _, r := range results {
		if r.path.name != "gateway/bareproxy" && r.path.name != "direct/stdio" || r.skipped != "" {
			continue
		}
		fmt.Fprintf(&w, "| one call, %s (median of the rounds' p50; p90 of all calls) | %s | %s |\n", r.path.row,
			time.Duration(median(r.p50)).Round(time.Microsecond), percentile(r.all, 0.9).Round(time.Microsecond))
	}
	fmt.Fprintf(&w, "| start of a minimal Go program to its exit, %d times | %s | %s |\n", starts,
		percentile(st, 0.5).Round(time.Microsecond), percentile(st, 0.9).Round(time.Microsecond))
	return w.String()
}

// BenchmarkDataSync is one 4 KiB overwrite and data sync of a file in b.TempDir().
func BenchmarkDataSync(b *testing.B) {
	lat := syncLatencies(b, b.TempDir(), b.N)
	b.ReportMetric(float64(percentile(lat, 0.5).Nanoseconds()), "p50-ns")
}

// BenchmarkGoStart is one run of a minimal Go program, from fork to wait.
func BenchmarkGoStart(b *testing.B) {
	bin := buildHello(b)
	b.ResetTimer()
	lat := startLatencies(b, bin, b.N)
	b.ReportMetric(float64(percentile(lat, 0.5).Nanoseconds()), "p50-ns")
}
