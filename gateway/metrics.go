// Prometheus metrics of one Gateway, on a registry of its own: calls and their
// decisions counted from the events the gateway emits, upstream calls and audit
// writes timed where they happen, and what the store holds (pending approvals,
// quarantined pins) read when scraped.

package gateway

import (
	"context"
	"errors"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/pin"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// otherTool is the tool label of a call whose target the configuration in force does
// not serve (a tool removed by a reload while the call ran): labels are bounded by the
// catalog, never made from what a client sent.
const otherTool = "(other)"

// metricsStoreTimeout bounds the store reads of one scrape.
const metricsStoreTimeout = 5 * time.Second

// maxDecidedCalls bounds the calls remembered between their tool start and their
// end (see metrics.decided).
const maxDecidedCalls = 10_000

// metrics are a Gateway's Prometheus metrics. It is a [warden.Sink] of the gateway's
// events; Emit never blocks on I/O.
type metrics struct {
	g   *Gateway
	reg *prometheus.Registry

	calls           *prometheus.CounterVec
	decision        prometheus.Histogram
	upstreamSeconds *prometheus.HistogramVec
	upstreamErrors  *prometheus.CounterVec
	auditSeconds    *prometheus.HistogramVec
	auditFailures   *prometheus.CounterVec
	shadow          *prometheus.CounterVec // shadow verdicts, from warden.shadow events

	// decided holds the calls whose decision was observed at their tool start, so
	// that their end does not observe it again; order is the order they were added
	// in (it may name calls that ended since), to drop the oldest beyond
	// maxDecidedCalls.
	mu      sync.Mutex
	decided map[callKey]struct{}
	order   []callKey
}

type callKey struct {
	id    string
	start time.Time
}

func newMetrics(g *Gateway) *metrics {
	m := &metrics{
		g:       g,
		reg:     prometheus.NewRegistry(),
		decided: map[callKey]struct{}{},
		calls: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_calls_total",
			Help: "Governed calls that finished, by tool, status (ran, failed, refused, halted, pending) and the stage that decided them.",
		}, []string{"tool", "status", "stage"}),
		decision: prometheus.NewHistogram(prometheus.HistogramOpts{
			Name:    "warden_decision_seconds",
			Help:    "Time from a call's start to its decision: the tool's start for a call that runs, the call's end for one that does not.",
			Buckets: []float64{.0001, .00025, .0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30},
		}),
		upstreamSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "warden_upstream_call_seconds",
			Help:    "Time from sending a request to an upstream server to its answer or failure.",
			Buckets: []float64{.001, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10, 30, 60, 120, 300},
		}, []string{"server"}),
		upstreamErrors: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_upstream_errors_total",
			Help: "Upstream requests that failed (no connection, transport or protocol error, timeout) or whose tool result had isError set.",
		}, []string{"server"}),
		auditSeconds: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "warden_audit_write_seconds",
			Help:    "Time of one audit log write, by op (begin, end, record); a deferred entry from handing it to the store to its commit.",
			Buckets: []float64{.0005, .001, .0025, .005, .01, .025, .05, .1, .25, .5, 1, 2.5, 5, 10},
		}, []string{"op"}),
		auditFailures: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_audit_write_failures_total",
			Help: "Audit log writes that failed, by op (begin, end, record); each failed attempt of a deferred entry counts.",
		}, []string{"op"}),
		shadow: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "warden_shadow_verdicts_total",
			Help: "Calls a shadow policy would have decided more strictly (or could not decide), by tool, source (policy, shadow_policy) and outcome (would halt, would deny, would ask, fault); the calls' decisions did not change.",
		}, []string{"tool", "source", "outcome"}),
	}
	m.reg.MustRegister(
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
		m.calls, m.decision, m.upstreamSeconds, m.upstreamErrors, m.auditSeconds, m.auditFailures, m.shadow,
		storeGauges{m},
	)
	return m
}

// MetricsHandler serves the gateway's metrics in the Prometheus exposition formats,
// from a registry of this Gateway's own (with the Go runtime's and the process's
// metrics): mount it on a listener of its own, not on the MCP front. A metric that
// cannot be read (the store does not answer) is left out of that scrape and logged.
func (g *Gateway) MetricsHandler() http.Handler {
	return promhttp.HandlerFor(g.metrics.reg, promhttp.HandlerOpts{
		ErrorLog:      slog.NewLogLogger(g.log.Handler(), slog.LevelError),
		ErrorHandling: promhttp.ContinueOnError,
		Timeout:       2 * metricsStoreTimeout,
	})
}

// Emit counts a call when it ends and observes its decision time.
func (m *metrics) Emit(_ context.Context, e warden.Event) {
	if e.Name == warden.EventShadow {
		m.shadow.WithLabelValues(m.toolLabel(e.Tool), e.Checker, e.Outcome).Inc()
		return
	}
	if e.Start.IsZero() {
		return // not an event of a call
	}
	switch e.Name {
	case warden.EventToolStart:
		m.observeDecision(e)
		m.mu.Lock()
		k := callKey{e.CallID, e.Start}
		m.decided[k] = struct{}{}
		m.order = append(m.order, k)
		for len(m.decided) > maxDecidedCalls && len(m.order) > 0 {
			delete(m.decided, m.order[0])
			m.order = m.order[1:]
		}
		if len(m.order) > 2*maxDecidedCalls {
			// Most of order names calls that ended: keep only those still open.
			kept := make([]callKey, 0, len(m.decided))
			for _, k := range m.order {
				if _, ok := m.decided[k]; ok {
					kept = append(kept, k)
				}
			}
			m.order = kept
		}
		m.mu.Unlock()
	case warden.EventToolEnd:
		k := callKey{e.CallID, e.Start}
		m.mu.Lock()
		_, decided := m.decided[k]
		delete(m.decided, k)
		if len(m.decided) == 0 {
			m.order = m.order[:0]
		}
		m.mu.Unlock()
		if !decided {
			m.observeDecision(e)
		}
		m.calls.WithLabelValues(m.toolLabel(e.Tool), string(e.Status), string(e.Stage)).Inc()
	}
}

func (m *metrics) observeDecision(e warden.Event) {
	m.decision.Observe(max(e.Time.Sub(e.Start), 0).Seconds())
}

// toolLabel is name when the configuration in force serves it (a tool, a prompt, the
// resources, sampling, elicitation or roots of a configured server), otherTool otherwise.
func (m *metrics) toolLabel(name string) string {
	st := m.g.state.Load()
	if _, ok := st.tools[name]; ok {
		return name
	}
	if p, ok := strings.CutPrefix(name, upstream.PromptTargetPrefix); ok {
		if _, ok := st.cat.prompts[p]; ok {
			return name
		}
		return otherTool
	}
	for _, prefix := range []string{upstream.ResourceTargetPrefix, upstream.SamplingTargetPrefix, upstream.ElicitationTargetPrefix, upstream.RootsTargetPrefix} {
		if server, ok := strings.CutPrefix(name, prefix); ok {
			for _, sc := range st.cfg.Servers {
				if sc.Name == server {
					return name
				}
			}
			return otherTool
		}
	}
	return otherTool
}

// observeAudit is the journal's [audit.Options.Observe]: a write's time, and its
// failure. A write the caller gave up on (its context was cancelled) is timed but is
// not a failure of the store.
func (m *metrics) observeAudit(op string, d time.Duration, err error) {
	m.auditSeconds.WithLabelValues(op).Observe(d.Seconds())
	if err != nil && !errors.Is(err, context.Canceled) {
		m.auditFailures.WithLabelValues(op).Inc()
	}
}

// timeUpstream wraps an upstream executable of server (a tool, the prompts, the
// resources) so each request is timed from the moment it is sent (the slot's
// sentAt) and its failures are counted (see upstreamFailed).
func (m *metrics) timeUpstream(server string, x warden.Executable) warden.Executable {
	run := x.Run
	x.Run = func(ctx context.Context, args warden.Args, cred *warden.Credential) (any, error) {
		res, err := run(ctx, args, cred)
		slot, _ := ctx.Value(slotKey{}).(*resultSlot)
		if slot == nil {
			return res, err
		}
		if !slot.sentAt.IsZero() {
			m.upstreamSeconds.WithLabelValues(server).Observe(time.Since(slot.sentAt).Seconds())
		}
		if upstreamFailed(ctx, slot, res, err) {
			m.upstreamErrors.WithLabelValues(server).Inc()
		}
		return res, err
	}
	return x
}

// timeUpstreams is timeUpstream for each of xs, whose Source names their server
// ("mcp:<server>").
func (m *metrics) timeUpstreams(xs []warden.Executable) []warden.Executable {
	for i, x := range xs {
		xs[i] = m.timeUpstream(strings.TrimPrefix(x.Source, "mcp:"), x)
	}
	return xs
}

// upstreamFailed reports whether an upstream request counts as an upstream error: a
// result with isError set, or an error of the server (no connection could be made
// or verified, the transport failed, a protocol error, the call timed out). Not
// counted: a request the caller cancelled, one the gateway kept from being sent (its
// audit intent could not be written, the tool is quarantined, its arguments were
// refused before sending), and the gateway closing.
func upstreamFailed(ctx context.Context, slot *resultSlot, res any, err error) bool {
	if err == nil {
		_, isErr := res.(warden.ErrorResult)
		return isErr
	}
	var quarantined *pin.QuarantinedError
	switch {
	case ctx.Err() != nil, slot.intentFailed, errors.As(err, &quarantined), errors.Is(err, upstream.ErrClosed):
		return false
	case errors.Is(err, warden.ErrNotExecuted) && !errors.Is(err, upstream.ErrNotSent):
		return false // refused by the adapter before any request
	}
	return true
}

// storeGauges reads, at each scrape, what the store holds and what the head publisher
// last read. A value that cannot be read is left out (and logged): no number is
// better than a wrong one.
type storeGauges struct{ m *metrics }

var (
	pendingApprovalsDesc = prometheus.NewDesc("warden_pending_approvals", "Decisions waiting for a person in the store (undecided and unexpired), for every gateway sharing it.", nil, nil)
	pinsQuarantinedDesc  = prometheus.NewDesc("warden_pins_quarantined", "Tools whose definition changed since it was approved (or whose pin is not approved): hidden and refused until an operator approves.", nil, nil)
	auditHeadSeqDesc     = prometheus.NewDesc("warden_audit_head_seq", "The seq of the audit chain's head the gateway last published (see audit.head_interval); absent until it published one.", nil, nil)
)

func (s storeGauges) Describe(ch chan<- *prometheus.Desc) {
	ch <- pendingApprovalsDesc
	ch <- pinsQuarantinedDesc
	ch <- auditHeadSeqDesc
}

func (s storeGauges) Collect(ch chan<- prometheus.Metric) {
	g := s.m.g
	ctx, cancel := context.WithTimeout(context.Background(), metricsStoreTimeout)
	defer cancel()
	if pending, err := g.opts.Store.ListPending(ctx, store.PendingFilter{}); err != nil {
		g.log.Error("metrics: cannot read the pending approvals; warden_pending_approvals is left out of this scrape", "err", err)
	} else {
		ch <- prometheus.MustNewConstMetric(pendingApprovalsDesc, prometheus.GaugeValue, float64(len(pending)))
	}
	if pins, err := g.opts.Store.ListPins(ctx); err != nil {
		g.log.Error("metrics: cannot read the tool pins; warden_pins_quarantined is left out of this scrape", "err", err)
	} else {
		n := 0
		for _, p := range pins {
			if p.PendingHash != "" || !p.Approved {
				n++
			}
		}
		ch <- prometheus.MustNewConstMetric(pinsQuarantinedDesc, prometheus.GaugeValue, float64(n))
	}
	if seq := g.head.seq.Load(); seq > 0 {
		ch <- prometheus.MustNewConstMetric(auditHeadSeqDesc, prometheus.GaugeValue, float64(seq))
	}
}
