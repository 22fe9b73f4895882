package otlp_test

import (
	"bytes"
	"context"
	"log/slog"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/otlptest"
	"github.com/wardenhq/warden/otel/otlp"
	"github.com/wardenhq/warden/policy"
)

// otelVars are the variables that change what Start does; every test starts with
// them unset (an empty value is unset for the exporter and the SDK).
var otelVars = []string{
	"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT",
	"OTEL_EXPORTER_OTLP_HEADERS", "OTEL_EXPORTER_OTLP_TRACES_HEADERS", "OTEL_EXPORTER_OTLP_TIMEOUT",
	"OTEL_EXPORTER_OTLP_TRACES_TIMEOUT", "OTEL_SERVICE_NAME", "OTEL_RESOURCE_ATTRIBUTES",
	"OTEL_TRACES_SAMPLER", "OTEL_TRACES_SAMPLER_ARG", "OTEL_EXPORTER_OTLP_PROTOCOL", "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL",
}

func cleanEnv(t *testing.T) {
	t.Helper()
	for _, v := range otelVars {
		t.Setenv(v, "")
	}
}

// guard binds a read-only policy over two tools, reader (allowed) and bash (denied
// by rule *), with the exporter's sink.
func guard(t *testing.T, exp *otlp.Exporter) *warden.Guard {
	t.Helper()
	var reg warden.Registry
	run := func(context.Context, warden.Args, *warden.Credential) (any, error) { return "ok", nil }
	for _, name := range []string{"reader", "bash"} {
		if err := reg.Register(warden.Executable{Tool: warden.Tool{Name: name}, Run: run}); err != nil {
			t.Fatal(err)
		}
	}
	g, err := reg.Bind(warden.Config{Checkers: []warden.Checker{policy.ReadOnly()}, Sinks: []warden.Sink{exp.Sink()}, Revision: "sha256:rev1"})
	if err != nil {
		t.Fatal(err)
	}
	return g
}

// calls makes an allowed and a denied call and shuts the exporter down.
func calls(t *testing.T, exp *otlp.Exporter) {
	t.Helper()
	g := guard(t, exp)
	ctx := context.Background()
	id := warden.Identity{Tenant: "acme", Principal: "alice"}
	if out, err := g.Call(ctx, warden.Call{ID: "c1", Tool: "reader", Identity: id, Args: warden.MustParseArgs(`{"path":"/secret-value"}`)}); err != nil || out.Status != warden.StatusRan {
		t.Fatalf("allowed call: %v %v", out.Status, err)
	}
	if out, err := g.Call(ctx, warden.Call{ID: "c2", Tool: "bash", Identity: id, Args: warden.MustParseArgs(`{"command":"rm -rf /secret-value"}`)}); err != nil || out.Status != warden.StatusRefused {
		t.Fatalf("denied call: %v %v", out.Status, err)
	}
	sctx, cancel := context.WithTimeout(ctx, 5*time.Second)
	defer cancel()
	if err := exp.Shutdown(sctx); err != nil {
		t.Fatalf("Shutdown: %v", err)
	}
}

func start(t *testing.T, cfg otlp.Config) *otlp.Exporter {
	t.Helper()
	exp, err := otlp.Start(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if exp == nil {
		t.Fatal("Start returned no exporter")
	}
	return exp
}

func spanNamed(t *testing.T, rec *otlptest.Receiver, name string) otlptest.Span {
	t.Helper()
	for _, s := range rec.Spans() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q; received %v (receiver refused %v)", name, rec.Names(), rec.Errors())
	return otlptest.Span{}
}

func TestTraceExportFromConfig(t *testing.T) {
	cleanEnv(t)
	rec := otlptest.New("/v1/traces")
	defer rec.Close()
	ratio := 1.0
	exp := start(t, otlp.Config{
		Configured: true, Endpoint: rec.URL, Headers: map[string]string{"x-api-key": "k-123"},
		ServiceVersion: "v1.2.3", SampleRatio: &ratio, Timeout: 3 * time.Second,
	})
	if got, want := exp.Endpoint(), rec.URL+"/v1/traces"; got != want {
		t.Errorf("Endpoint() = %q, want %q", got, want)
	}
	calls(t, exp)
	if got, want := rec.Names(), []string{"warden.tool_call bash", "warden.tool_call reader"}; !slices.Equal(got, want) {
		t.Fatalf("span names %v, want %v (refused: %v)", got, want, rec.Errors())
	}
	ran := spanNamed(t, rec, "warden.tool_call reader")
	for k, want := range map[string]string{
		"warden.decision": "allow", "warden.status": "ran", "warden.revision": "sha256:rev1", "warden.principal": "alice",
		"warden.tenant": "acme", "warden.tool": "reader", "warden.call_id": "c1", "warden.executed": "true", "warden.stage": "execute",
	} {
		if ran.Attrs[k] != want {
			t.Errorf("allowed span: %s = %q, want %q (all: %v)", k, ran.Attrs[k], want, ran.Attrs)
		}
	}
	denied := spanNamed(t, rec, "warden.tool_call bash")
	for k, want := range map[string]string{
		"warden.decision": "deny", "warden.status": "refused", "warden.stage": "permission", "warden.rule_id": "*",
		"warden.revision": "sha256:rev1", "warden.principal": "alice", "warden.executed": "false",
	} {
		if denied.Attrs[k] != want {
			t.Errorf("denied span: %s = %q, want %q (all: %v)", k, denied.Attrs[k], want, denied.Attrs)
		}
	}
	for _, s := range rec.Spans() {
		if s.Resource["service.name"] != "warden" || s.Resource["service.version"] != "v1.2.3" {
			t.Errorf("span %s: resource %v, want service.name warden, service.version v1.2.3", s.Name, s.Resource)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, "secret-value") {
				t.Errorf("span %s: attribute %s carries an argument value: %q", s.Name, k, v)
			}
		}
	}
	reqs := rec.Requests()
	if len(reqs) == 0 {
		t.Fatal("no export request")
	}
	for _, r := range reqs {
		if got := r.Header.Get("X-Api-Key"); got != "k-123" {
			t.Errorf("export request header x-api-key = %q, want k-123", got)
		}
	}
}

// OTEL_EXPORTER_OTLP_ENDPOINT alone turns export on; OTEL_SERVICE_NAME names the
// service; OTEL_EXPORTER_OTLP_HEADERS are sent.
func TestTraceExportFromEnv(t *testing.T) {
	cleanEnv(t)
	rec := otlptest.New("/v1/traces")
	defer rec.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", rec.URL)
	t.Setenv("OTEL_SERVICE_NAME", "warden-prod")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "authorization=Bearer%20env-token")
	exp := start(t, otlp.Config{})
	if got, want := exp.Endpoint(), rec.URL+"/v1/traces"; got != want {
		t.Errorf("Endpoint() = %q, want %q", got, want)
	}
	calls(t, exp)
	if got := len(rec.Spans()); got != 2 {
		t.Fatalf("got %d spans, want 2 (refused: %v)", got, rec.Errors())
	}
	if got := rec.Spans()[0].Resource["service.name"]; got != "warden-prod" {
		t.Errorf("service.name = %q, want warden-prod", got)
	}
	if got := rec.Requests()[0].Header.Get("Authorization"); got != "Bearer env-token" {
		t.Errorf("Authorization = %q, want the one of OTEL_EXPORTER_OTLP_HEADERS", got)
	}
}

// OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is used as is: no /v1/traces appended.
func TestTraceExportTracesEndpointEnv(t *testing.T) {
	cleanEnv(t)
	rec := otlptest.New("/custom/traces")
	defer rec.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", rec.URL+"/custom/traces")
	exp := start(t, otlp.Config{})
	calls(t, exp)
	if got := len(rec.Spans()); got != 2 {
		t.Fatalf("got %d spans at /custom/traces, want 2 (refused: %v)", got, rec.Errors())
	}
}

// Config values win over the environment: endpoint, headers (replaced, not merged),
// service name and sample ratio.
func TestTraceExportPrecedence(t *testing.T) {
	cleanEnv(t)
	fromEnv := otlptest.New("/v1/traces")
	defer fromEnv.Close()
	fromConfig := otlptest.New("/otlp/v1/traces")
	defer fromConfig.Close()
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", fromEnv.URL)
	t.Setenv("OTEL_SERVICE_NAME", "from-env")
	t.Setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-env=1,x-api-key=env")
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	ratio := 1.0
	exp := start(t, otlp.Config{Configured: true, Endpoint: fromConfig.URL + "/otlp/v1/traces", ServiceName: "from-config", Headers: map[string]string{"x-api-key": "config"}, SampleRatio: &ratio})
	calls(t, exp)
	if n := len(fromEnv.Requests()); n != 0 {
		t.Errorf("the environment's endpoint got %d requests, want 0", n)
	}
	if got := len(fromConfig.Spans()); got != 2 {
		t.Fatalf("the config's endpoint got %d spans, want 2 (refused: %v)", got, fromConfig.Errors())
	}
	if got := fromConfig.Spans()[0].Resource["service.name"]; got != "from-config" {
		t.Errorf("service.name = %q, want from-config", got)
	}
	h := fromConfig.Requests()[0].Header
	if h.Get("X-Api-Key") != "config" || h.Get("X-Env") != "" {
		t.Errorf("headers x-api-key=%q x-env=%q: want the config's alone", h.Get("X-Api-Key"), h.Get("X-Env"))
	}

	// Without config values, the environment's sampler applies: always_off sends nothing.
	cleanEnv(t)
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", fromEnv.URL)
	t.Setenv("OTEL_TRACES_SAMPLER", "always_off")
	calls(t, start(t, otlp.Config{Configured: true}))
	if n := len(fromEnv.Spans()); n != 0 {
		t.Errorf("OTEL_TRACES_SAMPLER=always_off: %d spans exported, want 0", n)
	}
	// A config ratio of 0 sends nothing either.
	cleanEnv(t)
	zero := 0.0
	calls(t, start(t, otlp.Config{Configured: true, Endpoint: fromEnv.URL, SampleRatio: &zero}))
	if n := len(fromEnv.Spans()); n != 0 {
		t.Errorf("sample ratio 0: %d spans exported, want 0", n)
	}
}

func TestTraceExportOff(t *testing.T) {
	cleanEnv(t)
	if exp, err := otlp.Start(context.Background(), otlp.Config{}); exp != nil || err != nil {
		t.Errorf("no config, no variable: got %v, %v; want no exporter", exp, err)
	}
	on, why := otlp.Enabled(otlp.Config{})
	if on || why != "no traces section in the config and neither OTEL_EXPORTER_OTLP_ENDPOINT nor OTEL_EXPORTER_OTLP_TRACES_ENDPOINT is set" {
		t.Errorf("Enabled = %v, %q", on, why)
	}
	for _, v := range []string{"true", "TRUE", " True "} {
		t.Setenv("OTEL_SDK_DISABLED", v)
		t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318")
		if exp, err := otlp.Start(context.Background(), otlp.Config{Configured: true, Endpoint: "http://127.0.0.1:4318"}); exp != nil || err != nil {
			t.Errorf("OTEL_SDK_DISABLED=%q: got %v, %v; want no exporter", v, exp, err)
		}
		if on, why := otlp.Enabled(otlp.Config{Configured: true}); on || why != "OTEL_SDK_DISABLED is true" {
			t.Errorf("OTEL_SDK_DISABLED=%q: Enabled = %v, %q", v, on, why)
		}
	}
	t.Setenv("OTEL_SDK_DISABLED", "false")
	if on, _ := otlp.Enabled(otlp.Config{Configured: true}); !on {
		t.Error("OTEL_SDK_DISABLED=false turned export off")
	}
}

func TestTraceExportBadSettings(t *testing.T) {
	for _, tc := range []struct {
		env, value string
		cfg        otlp.Config
		want       string
	}{
		{cfg: otlp.Config{Configured: true, Endpoint: "127.0.0.1:4318"}, want: `traces.endpoint "127.0.0.1:4318": want an http:// or https:// URL, e.g. http://127.0.0.1:4318`},
		{cfg: otlp.Config{Configured: true, Endpoint: "grpc://collector:4317"}, want: `traces.endpoint "grpc://collector:4317": want an http:// or https:// URL, e.g. http://127.0.0.1:4318`},
		{cfg: otlp.Config{Configured: true, Endpoint: "http://u:p@collector:4318"}, want: `traces.endpoint "http://u:p@collector:4318" carries user info: send credentials in headers instead`},
		{env: "OTEL_EXPORTER_OTLP_ENDPOINT", value: "collector:4318", want: `OTEL_EXPORTER_OTLP_ENDPOINT "collector:4318": want an http:// or https:// URL, e.g. http://127.0.0.1:4318`},
		{env: "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", value: "http:///v1/traces", want: `OTEL_EXPORTER_OTLP_TRACES_ENDPOINT "http:///v1/traces" has no host`},
		{cfg: otlp.Config{Configured: true}, env: "OTEL_EXPORTER_OTLP_PROTOCOL", value: "grpc", want: `OTEL_EXPORTER_OTLP_PROTOCOL "grpc": warden exports traces over OTLP/HTTP only; set http/protobuf (the default) or http/json, or unset it`},
		{cfg: otlp.Config{Configured: true}, env: "OTEL_EXPORTER_OTLP_TRACES_PROTOCOL", value: "thrift", want: `OTEL_EXPORTER_OTLP_TRACES_PROTOCOL "thrift": warden exports traces over OTLP/HTTP only; set http/protobuf (the default) or http/json, or unset it`},
		{cfg: otlp.Config{Configured: true, SampleRatio: ptr(1.5)}, want: `traces: sample ratio 1.5 is out of range: give a number from 0 to 1`},
	} {
		cleanEnv(t)
		if tc.env != "" {
			t.Setenv(tc.env, tc.value)
		}
		exp, err := otlp.Start(context.Background(), tc.cfg)
		if err == nil || err.Error() != tc.want {
			t.Errorf("%+v %s=%s: got %v, %v; want error %q", tc.cfg, tc.env, tc.value, exp, err, tc.want)
		}
	}
}

func ptr(f float64) *float64 { return &f }

func TestResolveEndpoint(t *testing.T) {
	for in, want := range map[string]string{
		"http://127.0.0.1:4318":              "http://127.0.0.1:4318/v1/traces",
		"http://127.0.0.1:4318/":             "http://127.0.0.1:4318/v1/traces",
		"https://collector.example.com":      "https://collector.example.com/v1/traces",
		"https://collector.example.com/otlp": "https://collector.example.com/otlp",
		"http://c:4318/v1/traces":            "http://c:4318/v1/traces",
	} {
		if got, err := otlp.ResolveEndpoint(in); err != nil || got != want {
			t.Errorf("ResolveEndpoint(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
	for in, want := range map[string]string{
		"http://c:4318/v1/traces?x=1": `"http://c:4318/v1/traces?x=1" has a query or fragment, which the exporter would drop: remove it`,
		"http://c:4318#f":             `"http://c:4318#f" has a query or fragment, which the exporter would drop: remove it`,
		"ftp://c":                     `"ftp://c": want an http:// or https:// URL, e.g. http://127.0.0.1:4318`,
	} {
		if _, err := otlp.ResolveEndpoint(in); err == nil || err.Error() != want {
			t.Errorf("ResolveEndpoint(%q): error %v, want %q", in, err, want)
		}
	}
}

// A collector that cannot be reached holds no call up and fails none; the failure is
// logged once, and Shutdown returns within its deadline saying spans were lost.
func TestTraceExportDeadCollector(t *testing.T) {
	cleanEnv(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there any more: connections are refused
	var logs bytes.Buffer
	exp := start(t, otlp.Config{Configured: true, Endpoint: dead, Timeout: 500 * time.Millisecond, Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	g := guard(t, exp)
	ctx := context.Background()
	for i := range 50 {
		out, err := g.Call(ctx, warden.Call{Tool: "reader", Args: warden.MustParseArgs(`{"i":` + string(rune('0'+i%10)) + `}`)})
		if err != nil || out.Status != warden.StatusRan {
			t.Fatalf("call %d with a dead collector: %v %v", i, out.Status, err)
		}
	}
	sctx, cancel := context.WithTimeout(ctx, 3*time.Second)
	defer cancel()
	begin := time.Now()
	err = exp.Shutdown(sctx)
	if took := time.Since(begin); took > 3500*time.Millisecond {
		t.Errorf("Shutdown took %s, past its deadline", took)
	}
	if err == nil || err.Error() != "1 span batches could not be exported" {
		t.Errorf("Shutdown: %v, want an error saying spans were lost", err)
	}
	if n := strings.Count(logs.String(), "traces: spans could not be exported"); n != 1 {
		t.Errorf("export failure logged %d times, want once:\n%s", n, logs.String())
	}
	if !strings.Contains(logs.String(), "endpoint="+dead+"/v1/traces") {
		t.Errorf("log does not name the endpoint:\n%s", logs.String())
	}
}
