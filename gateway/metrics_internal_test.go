package gateway

import (
	"context"
	"fmt"
	"log/slog"
	"sort"
	"strings"
	"testing"
	"time"

	dto "github.com/prometheus/client_model/go"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// metricsStore answers the reads a scrape makes with fixed values.
type metricsStore struct {
	store.Store // nil: any other method panics
	pending     []store.Pending
	pins        []store.Pin
}

func (s metricsStore) ListPending(context.Context, store.PendingFilter) ([]store.Pending, error) {
	return s.pending, nil
}
func (s metricsStore) ListPins(context.Context) ([]store.Pin, error) { return s.pins, nil }
func (s metricsStore) AuditHead(context.Context) (store.Head, error) { return store.Head{}, nil }

func gather(t *testing.T, m *metrics) map[string]*dto.MetricFamily {
	t.Helper()
	fams, err := m.reg.Gather()
	if err != nil {
		t.Fatalf("Gather: %v", err)
	}
	out := map[string]*dto.MetricFamily{}
	for _, f := range fams {
		out[f.GetName()] = f
	}
	return out
}

func counterSeries(f *dto.MetricFamily) string {
	var out []string
	for _, m := range f.GetMetric() {
		var labels []string
		for _, l := range m.GetLabel() {
			labels = append(labels, l.GetName()+"="+l.GetValue())
		}
		out = append(out, fmt.Sprintf("{%s} %g", strings.Join(labels, ","), m.GetCounter().GetValue()+m.GetGauge().GetValue()))
	}
	sort.Strings(out)
	return strings.Join(out, "; ")
}

// newMetricsGateway is a gateway (not started) serving the tool mcp__notes__read,
// the prompt greet and the resources of server notes.
func newMetricsGateway(t *testing.T, s store.Store) *Gateway {
	t.Helper()
	g, err := New(&File{}, &Options{Store: s, Logger: slog.New(slog.DiscardHandler)})
	if err != nil {
		t.Fatal(err)
	}
	g.state.Store(&gatewayState{
		cfg:   &File{Servers: []upstream.ServerConfig{{Name: "notes"}}},
		tools: map[string]*governedTool{"mcp__notes__read": {}},
		cat:   catalogState{prompts: map[string]*governedPrompt{"greet": {}}},
	})
	return g
}

// The tool label is a name the configuration serves, or (other): never what a call
// named when nothing serves it.
func TestMetricsToolLabelBounded(t *testing.T) {
	g := newMetricsGateway(t, metricsStore{})
	now := time.Now()
	for _, name := range []string{
		"mcp__notes__read", "mcp__notes__read{\"x\":1}", "prompt:greet", "prompt:nope",
		"resource:notes", "resource:elsewhere", "sampling:notes", "elicitation:ghost", "",
	} {
		g.metrics.Emit(context.Background(), warden.Event{Name: warden.EventToolEnd, Start: now, Time: now, CallID: "c-" + name, Tool: name, Status: warden.StatusRefused, Stage: warden.StageLookup})
	}
	got := counterSeries(gather(t, g.metrics)["warden_calls_total"])
	want := "{stage=lookup,status=refused,tool=(other)} 5; " +
		"{stage=lookup,status=refused,tool=mcp__notes__read} 1; " +
		"{stage=lookup,status=refused,tool=prompt:greet} 1; " +
		"{stage=lookup,status=refused,tool=resource:notes} 1; " +
		"{stage=lookup,status=refused,tool=sampling:notes} 1"
	if got != want {
		t.Errorf("warden_calls_total:\n  %s\nwant:\n  %s", got, want)
	}
}

// A call's decision is observed once: at its tool start when it has one, at its end
// otherwise. The calls remembered in between are bounded.
func TestMetricsDecisionOnce(t *testing.T) {
	g := newMetricsGateway(t, metricsStore{})
	m := g.metrics
	start := time.Unix(1000, 0)
	ev := func(name, id string, after time.Duration) warden.Event {
		return warden.Event{Name: name, Start: start, Time: start.Add(after), CallID: id, Tool: "mcp__notes__read", Status: warden.StatusRan, Stage: warden.StageExecute}
	}
	ctx := context.Background()
	m.Emit(ctx, ev(warden.EventToolStart, "ran", 3*time.Millisecond))
	m.Emit(ctx, ev(warden.EventToolEnd, "ran", time.Second))
	m.Emit(ctx, ev(warden.EventToolEnd, "refused", 2*time.Millisecond))
	h := gather(t, m)["warden_decision_seconds"].GetMetric()[0].GetHistogram()
	if h.GetSampleCount() != 2 || fmt.Sprintf("%.4f", h.GetSampleSum()) != "0.0050" {
		t.Errorf("decisions: %d observed, sum %gs; want 2, 0.005s (the tool start of the call that ran, the end of the other)", h.GetSampleCount(), h.GetSampleSum())
	}

	// More calls started than are remembered: the oldest are forgotten, and the
	// memory stays bounded however many start.
	n := maxDecidedCalls + 5
	for i := range 3 * n {
		m.Emit(ctx, ev(warden.EventToolStart, fmt.Sprint("open-", i), 0))
	}
	m.mu.Lock()
	decided, order := len(m.decided), len(m.order)
	m.mu.Unlock()
	if decided != maxDecidedCalls || order > 2*maxDecidedCalls {
		t.Errorf("%d calls remembered, order of %d; want %d and at most %d", decided, order, maxDecidedCalls, 2*maxDecidedCalls)
	}
	for i := range 3 * n {
		m.Emit(ctx, ev(warden.EventToolEnd, fmt.Sprint("open-", i), 0))
	}
	m.mu.Lock()
	decided, order = len(m.decided), len(m.order)
	m.mu.Unlock()
	if decided != 0 || order != 0 {
		t.Errorf("after every call ended: %d remembered, order of %d; want none", decided, order)
	}
}

// The store gauges count what the store holds: undecided approvals, and pins with a
// changed definition or not approved.
func TestMetricsStoreGauges(t *testing.T) {
	s := metricsStore{
		pending: []store.Pending{{ID: "a"}, {ID: "b"}},
		pins: []store.Pin{
			{Name: "ok", Hash: "h1", Approved: true},
			{Name: "changed", Hash: "h2", Approved: true, PendingHash: "h3"},
			{Name: "unapproved", Hash: "h4"},
		},
	}
	g := newMetricsGateway(t, s)
	got := gather(t, g.metrics)
	for name, want := range map[string]string{"warden_pending_approvals": "{} 2", "warden_pins_quarantined": "{} 2"} {
		if s := counterSeries(got[name]); s != want {
			t.Errorf("%s: %s, want %s", name, s, want)
		}
	}
	if got["warden_audit_head_seq"] != nil {
		t.Errorf("warden_audit_head_seq is reported before any head was published")
	}
	g.head.seq.Store(42)
	if s := counterSeries(gather(t, g.metrics)["warden_audit_head_seq"]); s != "{} 42" {
		t.Errorf("warden_audit_head_seq: %s, want 42", s)
	}
}
