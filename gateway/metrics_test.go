package gateway_test

import (
	"context"
	"fmt"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/store"
)

// scrapeMetrics GETs url and parses the text exposition.
func scrapeMetrics(t *testing.T, url string) map[string]*dto.MetricFamily {
	t.Helper()
	resp, err := http.Get(url)
	if err != nil {
		t.Fatalf("scrape %s: %v", url, err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		t.Fatalf("scrape %s: %s", url, resp.Status)
	}
	if ct := resp.Header.Get("Content-Type"); !strings.HasPrefix(ct, "text/plain; version=0.0.4") {
		t.Fatalf("scrape %s: Content-Type %q, want the text exposition format", url, ct)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	fams, err := p.TextToMetricFamilies(resp.Body)
	if err != nil {
		t.Fatalf("parsing the exposition of %s: %v", url, err)
	}
	return fams
}

// labelKey renders a metric's labels as name=value pairs joined by commas, sorted by
// name.
func labelKey(m *dto.Metric) string {
	var parts []string
	for _, l := range m.GetLabel() {
		parts = append(parts, l.GetName()+"="+l.GetValue())
	}
	sort.Strings(parts)
	return strings.Join(parts, ",")
}

// values returns the values of family name by labelKey: a counter's or gauge's
// value, a histogram's sample count. An absent family is an empty map.
func values(fams map[string]*dto.MetricFamily, name string) map[string]float64 {
	out := map[string]float64{}
	for _, m := range fams[name].GetMetric() {
		switch {
		case m.Counter != nil:
			out[labelKey(m)] = m.Counter.GetValue()
		case m.Gauge != nil:
			out[labelKey(m)] = m.Gauge.GetValue()
		case m.Histogram != nil:
			out[labelKey(m)] = float64(m.Histogram.GetSampleCount())
		}
	}
	return out
}

func wantValues(t *testing.T, fams map[string]*dto.MetricFamily, name string, want map[string]float64) {
	t.Helper()
	got := values(fams, name)
	if fmt.Sprint(got) != fmt.Sprint(want) {
		t.Errorf("%s:\n  %v\nwant:\n  %v", name, got, want)
	}
}

// metricsServer serves e's MetricsHandler on a test server of its own and returns
// the URL of its /metrics.
func metricsServer(t *testing.T, e *gwEnv) string {
	t.Helper()
	mux := http.NewServeMux()
	mux.Handle("/metrics", e.gw.MetricsHandler())
	srv := httptest.NewServer(mux)
	t.Cleanup(srv.Close)
	return srv.URL + "/metrics"
}

// notesReadNotePin pins read_note to a definition it does not have, so discovery
// finds it changed and quarantines it.
func seedChangedPin(t *testing.T, st store.Store) {
	err := st.PutPin(context.Background(), store.Pin{
		Name: "mcp__notes__read_note", Hash: "sha256:" + strings.Repeat("0", 64),
		Definition: []byte(`{"name":"read_note"}`), Approved: true, ApprovedBy: "first-use",
	})
	if err != nil {
		t.Fatal(err)
	}
}

// TestMetricsCalls makes allowed, denied, halted, hidden, quarantined, pending and
// failing calls through a real gateway with real upstreams and checks every metric
// the scrape reports, exactly.
func TestMetricsCalls(t *testing.T) {
	e := gwStart(t, gwSetup{seed: seedChangedPin, extra: "approvals:\n  wait: 1s\n"})
	url := metricsServer(t, e)

	before := scrapeMetrics(t, url)
	wantValues(t, before, "warden_calls_total", map[string]float64{})
	wantValues(t, before, "warden_pending_approvals", map[string]float64{"": 0})
	wantValues(t, before, "warden_pins_quarantined", map[string]float64{"": 1})
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		if before[name] == nil {
			t.Errorf("the Go and process collectors' %s is missing", name)
		}
	}

	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "todo", "text": "buy milk"}), false, `Wrote note "todo" (8 bytes).`)
	gwWant(t, gwCall(t, w, "mcp__notes__list_notes", map[string]any{}), false, "todo")
	gwWant(t, gwCall(t, w, "mcp__notes__write_note", map[string]any{"name": "secret-plan", "text": "x"}), true, "Notes named secret* are written by people only. Choose another name.")
	gwWant(t, gwCall(t, w, "mcp__fault__fail", map[string]any{"text": "disk on fire"}), true, "MCP tool 'fail' (server 'fault') returned an error: disk on fire")
	if res := gwCall(t, w, "mcp__fault__crash", map[string]any{}); !res.IsError {
		t.Fatalf("crash: not an error")
	}
	// Nobody decides within approvals.wait: the call stays pending in the store.
	if res := gwCall(t, w, "mcp__notes__delete_note", map[string]any{"name": "todo"}); !res.IsError {
		t.Fatalf("delete_note ran without an approval")
	}
	// Quarantined: refused before the pipeline, as a lookup.
	gwWantUnknown(t, w, "mcp__notes__read_note", map[string]any{"name": "todo"})

	// A reader calling a writer's tool: hidden, refused as a lookup.
	r := e.connect(t, gwReaderToken, nil)
	gwWantUnknown(t, r, "mcp__notes__write_note", map[string]any{"name": "x", "text": "y"})

	// A halt, then a call in the halted session.
	h := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, h, "mcp__notes__write_note", map[string]any{"name": "creds", "text": "the password is hunter2"}), true, gwHaltText)
	gwWant(t, gwCall(t, h, "mcp__notes__list_notes", map[string]any{}), true, gwHaltText)

	got := scrapeMetrics(t, url)
	calls := map[string]float64{
		"stage=execute,status=ran,tool=mcp__notes__write_note":        1,
		"stage=execute,status=ran,tool=mcp__notes__list_notes":        1,
		"stage=permission,status=refused,tool=mcp__notes__write_note": 1,
		"stage=execute,status=failed,tool=mcp__fault__fail":           1,
		"stage=execute,status=failed,tool=mcp__fault__crash":          1,
		"stage=human,status=pending,tool=mcp__notes__delete_note":     1,
		"stage=lookup,status=refused,tool=mcp__notes__read_note":      1,
		"stage=lookup,status=refused,tool=mcp__notes__write_note":     1,
		"stage=permission,status=halted,tool=mcp__notes__write_note":  1,
		"stage=gate,status=refused,tool=mcp__notes__list_notes":       1,
	}
	wantValues(t, got, "warden_calls_total", calls)
	// Every call is decided exactly once: at its tool's start or at its end.
	wantValues(t, got, "warden_decision_seconds", map[string]float64{"": float64(len(calls))})
	wantValues(t, got, "warden_upstream_call_seconds", map[string]float64{"server=notes": 2, "server=fault": 2})
	// isError (fail) and a transport failure (crash).
	wantValues(t, got, "warden_upstream_errors_total", map[string]float64{"server=fault": 2})
	wantValues(t, got, "warden_pending_approvals", map[string]float64{"": 1})
	wantValues(t, got, "warden_pins_quarantined", map[string]float64{"": 1})
	wantValues(t, got, "warden_audit_write_failures_total", map[string]float64{})
	for _, name := range []string{"warden_decision_seconds", "warden_upstream_call_seconds", "warden_audit_write_seconds"} {
		if typ := got[name].GetType(); typ != dto.MetricType_HISTOGRAM {
			t.Errorf("%s is a %s, want a histogram", name, typ)
		}
	}

	// Once closed, the deferred completions are durable and the last head is
	// published: the audit metrics account for every write, and the head is the
	// store's.
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := e.gw.Close(ctx); err != nil {
		t.Fatal(err)
	}
	after := scrapeMetrics(t, url)
	head, err := e.st.AuditHead(ctx)
	if err != nil {
		t.Fatal(err)
	}
	wantValues(t, after, "warden_audit_head_seq", map[string]float64{"": float64(head.Seq)})
	// Four calls ran (an intent and a completion each); six never did (one record
	// each: four through the journal, two refused before the pipeline).
	wantValues(t, after, "warden_audit_write_seconds", map[string]float64{"op=begin": 4, "op=end": 4, "op=record": 6})
	wantValues(t, after, "warden_audit_write_failures_total", map[string]float64{})
	if n := int64(4*2 + 6); head.Seq < n {
		t.Errorf("audit head seq %d, want at least %d entries", head.Seq, n)
	}
}

// TestMetricsStoreFailures: with the store gone, the gauges read from it are left out
// of the scrape (and the failure is logged) rather than reported wrong, and the audit
// writes that fail are counted.
func TestMetricsStoreFailures(t *testing.T) {
	e := gwStart(t, gwSetup{})
	url := metricsServer(t, e)
	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__notes__list_notes", map[string]any{}), false, "No notes.")

	if err := e.st.Close(); err != nil {
		t.Fatal(err)
	}
	// The audit intent cannot be written: the request is not sent.
	gwWant(t, gwCall(t, w, "mcp__notes__list_notes", map[string]any{}), true,
		`Tool 'mcp__notes__list_notes' failed: the tool did not execute: server "notes": tool "list_notes" not sent: the call could not be recorded in the audit log: store: closed`)
	got := scrapeMetrics(t, url)
	for _, name := range []string{"warden_pending_approvals", "warden_pins_quarantined"} {
		if got[name] != nil {
			t.Errorf("%s is reported although the store cannot be read: %v", name, values(got, name))
		}
	}
	for _, msg := range []string{
		"metrics: cannot read the pending approvals; warden_pending_approvals is left out of this scrape",
		"metrics: cannot read the tool pins; warden_pins_quarantined is left out of this scrape",
	} {
		if !strings.Contains(e.log.String(), msg) {
			t.Errorf("the log does not say %q", msg)
		}
	}
	// The intent could not be written (the call did not run), nor the refusal's record.
	wantValues(t, got, "warden_audit_write_failures_total", map[string]float64{"op=begin": 1, "op=record": 1})
	wantValues(t, got, "warden_calls_total", map[string]float64{
		"stage=execute,status=ran,tool=mcp__notes__list_notes":    1,
		"stage=execute,status=failed,tool=mcp__notes__list_notes": 1,
	})
	// The request that was not sent is neither timed nor an error of the upstream.
	wantValues(t, got, "warden_upstream_call_seconds", map[string]float64{"server=notes": 1})
	wantValues(t, got, "warden_upstream_errors_total", map[string]float64{})
}

// TestMetricsConfig: metrics.listen is decoded strictly, and a bad address is an
// error that names the key and says how to fix it.
func TestMetricsConfig(t *testing.T) {
	const base = "policy: p.yaml\nlisten: 127.0.0.1:8080\nclients:\n  - principal: reader-agent\n    token_env: READER_TOKEN\n"
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	cfg, err := gateway.ParseFile(file, []byte(base+"metrics:\n  listen: 127.0.0.1:9464\n"), cfgGetenv)
	if err != nil || cfg.MetricsListen != "127.0.0.1:9464" {
		t.Fatalf("metrics.listen: %q, %v", cfg.MetricsListen, err)
	}
	if cfg, err := gateway.ParseFile(file, []byte(base), cfgGetenv); err != nil || cfg.MetricsListen != "" {
		t.Fatalf("no metrics section: %q, %v", cfg.MetricsListen, err)
	}
	for _, c := range []struct {
		name, yaml string
		line       int
		msg        string
	}{
		{"not host:port", "metrics:\n  listen: localhost\n", 7, `metrics.listen "localhost" is not host:port`},
		{"named port", "metrics:\n  listen: 127.0.0.1:http\n", 7, `metrics.listen "127.0.0.1:http" is not host:port`},
		{"port out of range", "metrics:\n  listen: 127.0.0.1:70000\n", 7, `metrics.listen "127.0.0.1:70000" is not host:port`},
		{"empty", "metrics:\n  listen: ''\n", 7, "metrics.listen is empty"},
		{"a number", "metrics:\n  listen: 9464\n", 7, "metrics.listen must be a string, got a number"},
		{"the MCP listener's", "metrics:\n  listen: 127.0.0.1:8080\n", 7, "metrics.listen 127.0.0.1:8080 is the address of listen"},
		{"unknown key", "metrics:\n  address: 127.0.0.1:9464\n", 7, `unknown key "address" in metrics`},
		{"not a mapping", "metrics: 127.0.0.1:9464\n", 6, "metrics must be a mapping"},
	} {
		t.Run(c.name, func(t *testing.T) {
			_, err := gateway.ParseFile(file, []byte(base+c.yaml), cfgGetenv)
			wantConfigError(t, err, file, c.line, c.msg)
		})
	}
	if !slices.Contains(gateway.KeyPaths(), "metrics.listen") {
		t.Errorf("KeyPaths does not list metrics.listen")
	}
}
