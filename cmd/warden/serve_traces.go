package main

import (
	"context"
	"fmt"
	"log/slog"
	"sync"
	"time"

	gotel "go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/otel/otlp"
)

// traceShutdownTimeout bounds exporting the last spans at shutdown: a collector that
// is down costs a shutdown this long at most.
const traceShutdownTimeout = 5 * time.Second

var otelErrorsOnce sync.Once

// startTraces starts exporting a span per call when the config's traces section or
// the OTEL_* variables ask for it (nil when they do not). An error is a setting that
// cannot work; it names the setting.
func startTraces(ctx context.Context, cfg *gateway.File, log *slog.Logger) (*otlp.Exporter, error) {
	c := otlp.Config{ServiceVersion: version(), Attributes: originAttrs, Logger: log}
	if t := cfg.Traces; t != nil {
		c.Configured, c.Endpoint, c.Headers, c.ServiceName = true, t.Endpoint, t.Headers, t.ServiceName
		c.StageSpans, c.SampleRatio, c.Timeout = t.StageSpans, t.SampleRatio, t.Timeout
	}
	if on, why := otlp.Enabled(c); !on {
		if cfg.Traces != nil {
			log.Info("traces: off although the config has a traces section", "reason", why)
		}
		return nil, nil
	}
	exp, err := otlp.Start(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", cfg.File, err)
	}
	// OpenTelemetry's own errors (beside the exporter's, which it logs) go to this
	// log, not the standard logger; set once, for the first serve of the process.
	otelErrorsOnce.Do(func() { gotel.SetErrorHandler(otlp.ErrorHandler(log)) })
	log.Info("traces: exporting a span per call over OTLP/HTTP", "endpoint", exp.Endpoint())
	return exp, nil
}

// stopTraces exports the last spans and stops the exporter, for traceShutdownTimeout
// at most.
func stopTraces(ctx context.Context, exp *otlp.Exporter, log *slog.Logger) {
	if exp == nil {
		return
	}
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), traceShutdownTimeout)
	defer cancel()
	if err := exp.Shutdown(ctx); err != nil {
		log.Warn("traces: the last spans may be lost", "endpoint", exp.Endpoint(), "error", err)
	}
}

// originAttrs labels a call's span with what the gateway knows of it beyond its
// events: the upstream server, the tool's name there, the caller's role.
func originAttrs(ctx context.Context, _ warden.Event) []attribute.KeyValue {
	o, ok := gateway.CallOriginOf(ctx)
	if !ok {
		return nil
	}
	var a []attribute.KeyValue
	for _, kv := range [][2]string{{"warden.upstream.server", o.Server}, {"warden.upstream.tool", o.RemoteTool}, {"warden.role", o.Role}} {
		if kv[1] != "" {
			a = append(a, attribute.String(kv[0], kv[1]))
		}
	}
	return a
}
