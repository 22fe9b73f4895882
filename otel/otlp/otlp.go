// Package otlp exports the spans of an [otel.Sink] to an OpenTelemetry collector over
// OTLP/HTTP, batched: it builds the tracer provider (resource, sampler, batch span
// processor) from a [Config] and the standard OTEL_* environment variables, and shuts
// it down with a bound.
//
// Exporting never holds a call up: spans are queued (a full queue drops them) and sent
// from the batch processor's goroutine, each request bounded by the timeout. A
// collector that cannot be reached is logged, at most once per [errorLogInterval],
// with the count of the batches lost since the last message.
//
// Precedence, for each setting: a value of the Config wins over the environment, and
// the environment over the defaults. In detail:
//
//   - Endpoint: Config.Endpoint, else OTEL_EXPORTER_OTLP_TRACES_ENDPOINT (used as is),
//     else OTEL_EXPORTER_OTLP_ENDPOINT (with /v1/traces appended to its path), else
//     http://localhost:4318/v1/traces. Config.Endpoint follows the second rule when it
//     has no path (or only "/"): /v1/traces is appended; a URL with a path is used as
//     is (see [ResolveEndpoint]).
//   - Headers: Config.Headers replace OTEL_EXPORTER_OTLP_HEADERS and
//     OTEL_EXPORTER_OTLP_TRACES_HEADERS when there is at least one; they are not
//     merged.
//   - Timeout: Config.Timeout, else OTEL_EXPORTER_OTLP_TRACES_TIMEOUT or
//     OTEL_EXPORTER_OTLP_TIMEOUT (milliseconds), else 10s.
//   - Sampling: Config.SampleRatio (parent-based, trace-id ratio), else
//     OTEL_TRACES_SAMPLER and OTEL_TRACES_SAMPLER_ARG, else every span.
//   - service.name: Config.ServiceName, else OTEL_SERVICE_NAME, else the service.name
//     of OTEL_RESOURCE_ATTRIBUTES, else "warden". service.version is
//     Config.ServiceVersion.
//
// Export is on when Config.Configured is set or one of the two endpoint variables is
// set, and off whenever OTEL_SDK_DISABLED is true (case-insensitive).
package otlp

import (
	"context"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"strings"
	"sync"
	"time"

	gotel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	"go.opentelemetry.io/otel/trace"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/otel"
)

// The environment variables Start reads itself (the exporter and the SDK read the
// other OTEL_* variables).
const (
	EnvSDKDisabled    = "OTEL_SDK_DISABLED"
	EnvEndpoint       = "OTEL_EXPORTER_OTLP_ENDPOINT"
	EnvTracesEndpoint = "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"
	EnvProtocol       = "OTEL_EXPORTER_OTLP_PROTOCOL"
	EnvTracesProtocol = "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL"
)

// Defaults.
const (
	DefaultServiceName = "warden"
	DefaultEndpoint    = "http://localhost:4318/v1/traces"
	// TracesPath is appended to an endpoint URL that has no path.
	TracesPath = "/v1/traces"
	// errorLogInterval is how often a failing export is logged at most.
	errorLogInterval = time.Minute
)

// Config is what the gateway config sets; a zero field leaves the setting to the
// environment and the defaults (see the package documentation).
type Config struct {
	// Configured reports that the gateway config has a traces section: export is on
	// even when no endpoint variable is set.
	Configured bool
	// Endpoint is an http:// or https:// URL (see [ResolveEndpoint]).
	Endpoint string
	// Headers are sent with every export request.
	Headers map[string]string
	// ServiceName and ServiceVersion are the resource's service.name and
	// service.version.
	ServiceName    string
	ServiceVersion string
	// SampleRatio, when set, is the share of calls traced, from 0 to 1.
	SampleRatio *float64
	// Timeout bounds one export request, retries included.
	Timeout time.Duration
	// StageSpans and Attributes are passed to the sink (see [otel.Options]).
	StageSpans bool
	Attributes func(ctx context.Context, end warden.Event) []attribute.KeyValue
	// Logger receives export failures; nil discards them.
	Logger *slog.Logger
}

// Exporter is a running export: its sink turns events into spans, which its tracer
// provider batches and sends.
type Exporter struct {
	tp       *sdktrace.TracerProvider
	sink     *otel.Sink
	exp      *loggingExporter
	endpoint string
}

// Enabled reports whether Start would export for cfg in the current environment,
// and why not when it would not.
func Enabled(cfg Config) (bool, string) {
	if strings.EqualFold(getenv(EnvSDKDisabled), "true") {
		return false, EnvSDKDisabled + " is true"
	}
	if cfg.Configured || getenv(EnvEndpoint) != "" || getenv(EnvTracesEndpoint) != "" {
		return true, ""
	}
	return false, "no traces section in the config and neither " + EnvEndpoint + " nor " + EnvTracesEndpoint + " is set"
}

// Start builds the tracer provider and its sink. It returns nil (and no error) when
// export is off (see [Enabled]). An error is a setting that cannot work (a bad
// endpoint URL, in the config or the environment, a sample ratio out of range); it
// names the setting. Start opens no connection: a collector that is down is found,
// and logged, at the first export.
func Start(ctx context.Context, cfg Config) (*Exporter, error) {
	if on, _ := Enabled(cfg); !on {
		return nil, nil
	}
	endpoint, err := effectiveEndpoint(cfg.Endpoint)
	if err != nil {
		return nil, err
	}
	for _, name := range []string{EnvTracesProtocol, EnvProtocol} {
		switch v := getenv(name); v {
		case "", "http/protobuf", "http/json":
		default:
			return nil, fmt.Errorf("%s %q: warden exports traces over OTLP/HTTP only; set http/protobuf (the default) or http/json, or unset it", name, v)
		}
	}
	opts := []otlptracehttp.Option{}
	if endpoint != "" {
		opts = append(opts, otlptracehttp.WithEndpointURL(endpoint))
	}
	if len(cfg.Headers) > 0 {
		opts = append(opts, otlptracehttp.WithHeaders(cfg.Headers))
	}
	if cfg.Timeout > 0 {
		opts = append(opts, otlptracehttp.WithTimeout(cfg.Timeout))
	}
	client, err := otlptracehttp.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("traces: the OTLP exporter: %w", err)
	}
	log := cfg.Logger
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	shown := endpoint
	if shown == "" {
		shown = envEndpoint()
	}
	exp := &loggingExporter{SpanExporter: client, log: log, endpoint: shown}

	res, err := newResource(ctx, cfg)
	if err != nil {
		return nil, err
	}
	tpOpts := []sdktrace.TracerProviderOption{sdktrace.WithBatcher(exp), sdktrace.WithResource(res)}
	if r := cfg.SampleRatio; r != nil {
		if *r < 0 || *r > 1 {
			return nil, fmt.Errorf("traces: sample ratio %v is out of range: give a number from 0 to 1", *r)
		}
		tpOpts = append(tpOpts, sdktrace.WithSampler(sdktrace.ParentBased(sdktrace.TraceIDRatioBased(*r))))
	}
	tp := sdktrace.NewTracerProvider(tpOpts...)
	var tracerOpts []trace.TracerOption
	if cfg.ServiceVersion != "" {
		tracerOpts = append(tracerOpts, trace.WithInstrumentationVersion(cfg.ServiceVersion))
	}
	sink := otel.NewSink(tp.Tracer("github.com/wardenhq/warden/otel", tracerOpts...), &otel.Options{StageSpans: cfg.StageSpans, Attributes: cfg.Attributes})
	return &Exporter{tp: tp, sink: sink, exp: exp, endpoint: shown}, nil
}

// Sink returns the sink whose calls become spans.
func (e *Exporter) Sink() warden.Sink { return e.sink }

// Endpoint returns the URL spans are posted to.
func (e *Exporter) Endpoint() string { return e.endpoint }

// Shutdown exports the spans still queued and stops the provider, until ctx ends:
// give it a deadline, so that a collector that is down cannot hold a shutdown. The
// error reports spans that could not be exported.
func (e *Exporter) Shutdown(ctx context.Context) error {
	err := e.tp.ForceFlush(ctx)
	if serr := e.tp.Shutdown(ctx); err == nil {
		err = serr
	}
	if err != nil {
		return fmt.Errorf("the last spans were not exported: %w", err)
	}
	if lost := e.exp.lostSinceStart(); lost > 0 {
		return fmt.Errorf("%d span batches could not be exported", lost)
	}
	return nil
}

// ResolveEndpoint returns the URL spans are posted to for an endpoint of the config:
// an http:// or https:// URL with a host, no user info, query or fragment. A URL
// without a path (or with only "/") gets /v1/traces, as the OTLP convention for a
// base URL (OTEL_EXPORTER_OTLP_ENDPOINT) has it: http://collector:4318 posts to
// http://collector:4318/v1/traces. A URL with a path is used as is, as the
// per-signal OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is: http://collector:4318/otlp/traces
// posts there. The scheme decides TLS: https uses it, http does not.
func ResolveEndpoint(raw string) (string, error) {
	u, err := url.Parse(raw)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https"):
		return "", fmt.Errorf("%q: want an http:// or https:// URL, e.g. http://127.0.0.1:4318", raw)
	case u.Host == "":
		return "", fmt.Errorf("%q has no host", raw)
	case u.User != nil:
		return "", fmt.Errorf("%q carries user info: send credentials in headers instead", raw)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(raw, "?") || strings.HasSuffix(raw, "#"):
		return "", fmt.Errorf("%q has a query or fragment, which the exporter would drop: remove it", raw)
	}
	if u.Path == "" || u.Path == "/" {
		u.Path = TracesPath
	}
	return u.String(), nil
}

// effectiveEndpoint is the URL to pass the exporter: the config's, resolved, or the
// default when no endpoint variable is set either; "" leaves it to the variables,
// which are checked here so that a bad one is an error rather than a silent default.
func effectiveEndpoint(configured string) (string, error) {
	if configured != "" {
		u, err := ResolveEndpoint(configured)
		if err != nil {
			return "", fmt.Errorf("traces.endpoint %w", err)
		}
		return u, nil
	}
	for _, name := range []string{EnvTracesEndpoint, EnvEndpoint} {
		v := getenv(name)
		if v == "" {
			continue
		}
		if _, err := ResolveEndpoint(v); err != nil {
			return "", fmt.Errorf("%s %w", name, err)
		}
		return "", nil
	}
	return DefaultEndpoint, nil
}

// envEndpoint is the URL the exporter derives from the endpoint variables (checked
// already by effectiveEndpoint), for the log.
func envEndpoint() string {
	if v := getenv(EnvTracesEndpoint); v != "" {
		u, _ := url.Parse(v)
		if u.Path == "" {
			u.Path = "/"
		}
		return u.String()
	}
	u, _ := url.Parse(getenv(EnvEndpoint))
	u.Path = strings.TrimSuffix(u.Path, "/") + TracesPath
	return u.String()
}

// getenv reads a variable as the exporter does: surrounding space trimmed, empty
// meaning unset.
func getenv(name string) string { return strings.TrimSpace(os.Getenv(name)) }

// newResource is the resource of every span: service.name and service.version, with
// the environment's resource attributes in between (see the package documentation).
func newResource(ctx context.Context, cfg Config) (*resource.Resource, error) {
	base := []attribute.KeyValue{attribute.String("service.name", DefaultServiceName)}
	if cfg.ServiceVersion != "" {
		base = append(base, attribute.String("service.version", cfg.ServiceVersion))
	}
	opts := []resource.Option{resource.WithTelemetrySDK(), resource.WithAttributes(base...), resource.WithFromEnv()}
	if cfg.ServiceName != "" {
		opts = append(opts, resource.WithAttributes(attribute.String("service.name", cfg.ServiceName)))
	}
	res, err := resource.New(ctx, opts...)
	if err != nil {
		return nil, fmt.Errorf("traces: the resource (check OTEL_RESOURCE_ATTRIBUTES and OTEL_SERVICE_NAME): %w", err)
	}
	return res, nil
}

// loggingExporter logs the exporter's failures (at most once per errorLogInterval,
// with the count of failed batches since the last message) and reports none to the
// batch processor, which would hand them to OpenTelemetry's global error handler.
type loggingExporter struct {
	sdktrace.SpanExporter
	log      *slog.Logger
	endpoint string
	limit    limiter

	mu   sync.Mutex
	lost int
}

func (e *loggingExporter) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	err := e.SpanExporter.ExportSpans(ctx, spans)
	if err == nil {
		return nil
	}
	e.mu.Lock()
	e.lost++
	e.mu.Unlock()
	if suppressed, ok := e.limit.allow(); ok {
		e.log.Warn("traces: spans could not be exported; calls go on, their spans are lost", "endpoint", e.endpoint, "spans", len(spans), "failures_not_logged", suppressed, "error", err)
	}
	return nil
}

func (e *loggingExporter) lostSinceStart() int {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.lost
}

// limiter lets one message through per errorLogInterval and counts the others.
type limiter struct {
	now func() time.Time // nil: time.Now

	mu         sync.Mutex
	last       time.Time
	suppressed int
}

// allow reports whether a message may be logged now, and how many were not since the
// last one that was.
func (l *limiter) allow() (suppressed int, ok bool) {
	now := time.Now
	if l.now != nil {
		now = l.now
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	t := now()
	if !l.last.IsZero() && t.Sub(l.last) < errorLogInterval {
		l.suppressed++
		return 0, false
	}
	suppressed, l.last, l.suppressed = l.suppressed, t, 0
	return suppressed, true
}

// ErrorHandler returns a handler for OpenTelemetry's global errors (otel.SetErrorHandler)
// that logs them to log at warning level, at most once per minute, counting the ones
// not logged. Without one, the SDK writes them to the standard logger. The exporter's
// own failures do not reach it (Start's exporter logs them itself).
func ErrorHandler(log *slog.Logger) gotel.ErrorHandler {
	l := &limiter{}
	return gotel.ErrorHandlerFunc(func(err error) {
		if suppressed, ok := l.allow(); ok {
			log.Warn("traces: OpenTelemetry error", "errors_not_logged", suppressed, "error", err)
		}
	})
}
