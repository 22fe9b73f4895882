package shell_test

import (
	"testing"

	"github.com/wardenhq/warden/shell"
)

func benchmarkAnalyze(b *testing.B, in string, simple bool) {
	b.ReportAllocs()
	for b.Loop() {
		if got := shell.Analyze(in); got.Simple != simple {
			b.Fatalf("Analyze(%q).Simple = %v", in, got.Simple)
		}
	}
}

func BenchmarkAnalyzeSimple(b *testing.B) {
	benchmarkAnalyze(b, "git log --oneline -n 5", true)
}

func BenchmarkAnalyzeWrapped(b *testing.B) {
	benchmarkAnalyze(b, "sudo env LANG=C timeout 5 rm -rf /tmp/x", true)
}

func BenchmarkAnalyzeRejected(b *testing.B) {
	benchmarkAnalyze(b, "echo hi; rm -rf /", false)
}

// BenchmarkAnalyzeContinuation measures the line-continuation path, which
// parses the joined text a second time.
func BenchmarkAnalyzeContinuation(b *testing.B) {
	benchmarkAnalyze(b, "go test \\\n  -run X \\\n  ./shell", true)
}
