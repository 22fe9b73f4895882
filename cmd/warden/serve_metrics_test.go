package main

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/mcptest"
)

var metricsListeningRE = regexp.MustCompile(`msg="warden metrics listening" url=(http://(\S+?)/metrics)\n`)

// scrape GETs a metrics URL and parses the text exposition.
func scrape(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("GET %s: %s", url, resp.Status)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing %s: %v", url, err)
	}
	return fams
}

// series returns the values of a counter or gauge family by its labels
// (name=value, sorted, joined by commas).
func series(fams map[string]*dto.MetricFamily, name string) string {
	var out []string
	for _, m := range fams[name].GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		sort.Strings(labels)
		v := m.GetCounter().GetValue() + m.GetGauge().GetValue()
		out = append(out, fmt.Sprintf("{%s} %g", strings.Join(labels, ","), v))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

func httpStatus(t *testing.T, url string) int {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("GET %s: %v", url, err)
	}
	resp.Body.Close()
	return resp.StatusCode
}

// TestServeMetrics: with metrics.listen, `warden serve` serves /metrics on a listener
// of its own (logged at start), not on the MCP listener, with the calls it governed;
// the listener closes when the gateway stops.
func TestServeMetrics(t *testing.T) {
	skipWithoutSignals(t)
	t.Parallel()
	f := newNotesFixture(t, "", "1s")
	writeFile(t, f.config, f.cfg.yaml()+"metrics:\n  listen: 127.0.0.1:0\n")
	g := f.start(t)
	var m []string
	mcptest.WaitFor(t, startTimeout, "the gateway logs its metrics URL", func() bool {
		m = metricsListeningRE.FindStringSubmatch(g.log.String())
		return m != nil
	})
	metricsURL, metricsBase := m[1], "http://"+m[2]
	if metricsBase == g.base {
		t.Fatalf("the metrics are served on the MCP listener %s", g.base)
	}

	cs := connect(t, g.url, demoWriterToken)
	wantOK(t, callTool(t, cs, toolListNotes, map[string]any{}), "")
	got := scrape(t, metricsURL)
	if s, want := series(got, "warden_calls_total"), "{stage=execute,status=ran,tool="+toolListNotes+"} 1"; s != want {
		t.Errorf("warden_calls_total: %s, want %s", s, want)
	}
	for name, want := range map[string]string{"warden_pending_approvals": "{} 0", "warden_pins_quarantined": "{} 0"} {
		if s := series(got, name); s != want {
			t.Errorf("%s: %s, want %s", name, s, want)
		}
	}
	if got["go_goroutines"] == nil || got["process_start_time_seconds"] == nil {
		t.Errorf("the Go and process metrics are missing")
	}
	// Each listener serves only its own.
	if code := httpStatus(t, g.base+"/metrics"); code != http.StatusNotFound {
		t.Errorf("GET /metrics on the MCP listener: %d, want 404", code)
	}
	if code := httpStatus(t, metricsBase+"/mcp"); code != http.StatusNotFound {
		t.Errorf("GET /mcp on the metrics listener: %d, want 404", code)
	}
	cs.Close()

	g.signal(t, syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(callTimeout):
		t.Fatal("the gateway did not exit after SIGTERM")
	}
	if _, err := http.Get(metricsURL); err == nil || !errors.Is(err, syscall.ECONNREFUSED) {
		t.Errorf("GET %s after the gateway stopped: %v, want connection refused", metricsURL, err)
	}
}

// TestServeMetricsListenTaken: a metrics.listen address that is taken stops the start
// with a config error naming the key and the address, before any client is served.
func TestServeMetricsListenTaken(t *testing.T) {
	t.Parallel()
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	addr := taken.Addr().String()
	dir := t.TempDir()
	cfg := filepath.Join(dir, "gateway.yaml")
	writeFile(t, filepath.Join(dir, "policy.yaml"), faultPolicy)
	writeFile(t, cfg, "policy: policy.yaml\nservers: {}\nlisten: 127.0.0.1:0\nclients:\n  - principal: a\n    token_sha256: "+inbox.HashToken(demoWriterToken)+"\nmetrics:\n  listen: "+addr+"\n")
	r := wardenCLI(t, "", "serve", "-c", cfg)
	want := fmt.Sprintf("\n%s: metrics.listen %s: listen tcp %s: bind: address already in use (pick a free address for metrics.listen, or remove the metrics section)\n", cfg, addr, addr)
	if r.code != exitUsage || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("serve with a taken metrics.listen: exit %d, stderr:\n%s\nwant exit %d and stderr ending with:\n%s", r.code, r.stderr, exitUsage, want)
	}
	if strings.Contains(r.stderr, "warden gateway listening") {
		t.Errorf("the MCP listener was opened before the metrics listener failed:\n%s", r.stderr)
	}
}

// TestServeStdioMetricsNotOpened: with --stdio, metrics.listen is not opened (stdio
// copies share the config and would compete for the port), and the log says so.
func TestServeStdioMetricsNotOpened(t *testing.T) {
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	dir := t.TempDir()
	policy, err := filepath.Abs(filepath.Join("..", "..", "examples", "gateway", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := gwConfig{policy: policy, store: "sqlite://" + filepath.Join(dir, "warden.db"), wait: "1s",
		servers: "  notes:\n    command: not-admitted\n", stdioRole: "reader"}
	config := filepath.Join(dir, "gateway.yaml")
	writeFile(t, config, cfg.yaml()+"metrics:\n  listen: "+taken.Addr().String()+"\n")
	var stderr bytes.Buffer
	p, err := newServeProgram(serveOptions{config: config, stdio: true}, strings.NewReader(""), &bytes.Buffer{}, &stderr, nil)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Run(context.Background()); err != nil {
		t.Fatalf("Run: %v\nstderr: %s", err, stderr.String())
	}
	if want := `msg="metrics.listen is not opened with --stdio" address=` + taken.Addr().String() + "\n"; !strings.Contains(stderr.String(), want) {
		t.Errorf("stderr does not say %q:\n%s", want, stderr.String())
	}
}
