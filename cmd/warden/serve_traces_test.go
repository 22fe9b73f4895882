package main

// `warden serve` exporting a span per call to a real OTLP/HTTP receiver: the gateway
// is the built binary in front of the notes server, its collector an in-test server
// that decodes the protobuf it is sent.

import (
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/internal/otlptest"
	"github.com/wardenhq/warden/policy"
)

// withoutOTEL is env without any OTEL_* variable of the test's own environment, with
// extra added.
func withoutOTEL(env []string, extra ...string) []string {
	out := slices.DeleteFunc(slices.Clone(env), func(kv string) bool { return strings.HasPrefix(kv, "OTEL_") })
	return append(out, extra...)
}

// tracedCalls makes, as the writer client, an allowed call (list_notes) and one the
// policy denies (write_note of a secret* note, rule no-secret-notes), as the reader a
// call of a tool its role does not see (delete_note), then stops the gateway with
// SIGTERM and waits for it to exit.
func tracedCalls(t *testing.T, g *gatewayProc) {
	t.Helper()
	cs := connect(t, g.url, demoWriterToken)
	if res := callTool(t, cs, toolListNotes, map[string]any{}); res.IsError {
		t.Fatalf("list_notes: %s", mcptest.ResultText(res))
	}
	res := callTool(t, cs, toolWriteNote, map[string]any{"name": "secret-plans", "text": "launch-code-4711"})
	if !res.IsError || !strings.Contains(mcptest.ResultText(res), "Notes named secret* are written by people only") {
		t.Fatalf("write_note of a secret note: isError=%v %q; want the policy's refusal", res.IsError, mcptest.ResultText(res))
	}
	cs.Close()
	// A tool the reader's role does not see is refused before the pipeline.
	reader := connect(t, g.url, demoReaderToken)
	callToolErr(t, reader, toolDeleteNote, map[string]any{"name": "secret-plans"})
	reader.Close()
	stopGateway(t, g)
}

func stopGateway(t *testing.T, g *gatewayProc) time.Duration {
	t.Helper()
	begin := time.Now()
	g.signal(t, syscall.SIGTERM)
	select {
	case <-g.done:
	case <-time.After(time.Minute):
		t.Fatal("the gateway did not exit within a minute of SIGTERM")
	}
	if g.waitErr != nil {
		t.Errorf("the gateway exited with %v, want 0", g.waitErr)
	}
	return time.Since(begin)
}

func appendFile(t *testing.T, path, text string) {
	t.Helper()
	writeFile(t, path, readFile(t, path)+text)
}

func spanByName(t *testing.T, rec *otlptest.Receiver, name string) otlptest.Span {
	t.Helper()
	for _, s := range rec.Spans() {
		if s.Name == name {
			return s
		}
	}
	t.Fatalf("no span %q; received %v (receiver refused %v)", name, rec.Names(), rec.Errors())
	return otlptest.Span{}
}

func wantAttrs(t *testing.T, s otlptest.Span, want map[string]string) {
	t.Helper()
	for k, v := range want {
		if got, ok := s.Attrs[k]; !ok || got != v {
			t.Errorf("span %s: %s = %q, want %q\nall attributes: %v", s.Name, k, got, v, s.Attrs)
		}
	}
}

// The traces section: the allowed and the denied call each become one span with the
// decision, stage, rule, revision, principal, role, upstream and tool; the resource
// names the service; the configured headers reach the collector; no argument value is
// in any attribute.
func TestServeTraces(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	rec := otlptest.New("/v1/traces")
	defer rec.Close()
	f := newNotesFixture(t, "", "1s")
	appendFile(t, f.config, "traces:\n  endpoint: "+rec.URL+"\n  headers:\n    x-api-key: k-123\n  service_name: warden-test\n")
	pol, err := policy.LoadFile(f.policy, nil)
	if err != nil {
		t.Fatal(err)
	}
	g := startGateway(t, f.config, withoutOTEL(f.env))
	if want := `msg="traces: exporting a span per call over OTLP/HTTP" endpoint=` + rec.URL + "/v1/traces"; !strings.Contains(g.log.String(), want) {
		t.Errorf("the log does not say where spans go (%s):\n%s", want, g.log.String())
	}
	tracedCalls(t, g)

	if got, want := rec.Names(), []string{"warden.tool_call " + toolDeleteNote, "warden.tool_call " + toolListNotes, "warden.tool_call " + toolWriteNote}; !slices.Equal(got, want) {
		t.Fatalf("spans %v, want %v (receiver refused %v)", got, want, rec.Errors())
	}
	wantAttrs(t, spanByName(t, rec, "warden.tool_call "+toolListNotes), map[string]string{
		"warden.decision": "allow", "warden.stage": "execute", "warden.status": "ran", "warden.executed": "true",
		"warden.rule_id": "writer.allowlist", "warden.revision": pol.Revision(), "warden.principal": "writer-agent", "warden.role": "writer",
		"warden.upstream.server": "notes", "warden.upstream.tool": "list_notes", "warden.tool": toolListNotes,
	})
	denied := spanByName(t, rec, "warden.tool_call "+toolWriteNote)
	wantAttrs(t, denied, map[string]string{
		"warden.decision": "deny", "warden.stage": "permission", "warden.status": "refused", "warden.executed": "false",
		"warden.rule_id": "no-secret-notes", "warden.revision": pol.Revision(), "warden.principal": "writer-agent", "warden.role": "writer",
		"warden.upstream.server": "notes", "warden.upstream.tool": "write_note", "warden.tool": toolWriteNote,
	})
	wantAttrs(t, spanByName(t, rec, "warden.tool_call "+toolDeleteNote), map[string]string{
		"warden.decision": "deny", "warden.stage": "lookup", "warden.status": "refused", "warden.executed": "false",
		"warden.revision": pol.Revision(), "warden.principal": "reader-agent",
		"warden.upstream.server": "notes", "warden.upstream.tool": "delete_note", "warden.tool": toolDeleteNote,
	})
	for _, s := range rec.Spans() {
		if s.Resource["service.name"] != "warden-test" || s.Resource["service.version"] == "" {
			t.Errorf("span %s: resource %v; want service.name warden-test and a service.version", s.Name, s.Resource)
		}
		if _, ok := s.Attrs["warden.tenant"]; ok {
			t.Errorf("span %s has warden.tenant, but the client names no tenant", s.Name)
		}
		for k, v := range s.Attrs {
			if strings.Contains(v, "secret-plans") || strings.Contains(v, "launch-code-4711") {
				t.Errorf("span %s: attribute %s carries an argument value: %q", s.Name, k, v)
			}
		}
	}
	for _, r := range rec.Requests() {
		if got := r.Header.Get("X-Api-Key"); got != "k-123" {
			t.Errorf("export request header x-api-key = %q, want k-123 from traces.headers", got)
		}
	}
}

// Without a traces section, OTEL_EXPORTER_OTLP_ENDPOINT turns export on with the
// defaults (service.name warden); OTEL_SDK_DISABLED=true turns off even a section.
func TestServeTracesFromEnvAndDisabled(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	rec := otlptest.New("/v1/traces")
	defer rec.Close()
	var wg sync.WaitGroup
	wg.Go(func() {
		f := newNotesFixture(t, "", "1s")
		tracedCalls(t, startGateway(t, f.config, withoutOTEL(f.env, "OTEL_EXPORTER_OTLP_ENDPOINT="+rec.URL)))
	})
	off := otlptest.New("/v1/traces")
	defer off.Close()
	var offLog string
	wg.Go(func() {
		f := newNotesFixture(t, "", "1s")
		appendFile(t, f.config, "traces:\n  endpoint: "+off.URL+"\n")
		g := startGateway(t, f.config, withoutOTEL(f.env, "OTEL_SDK_DISABLED=true", "OTEL_EXPORTER_OTLP_ENDPOINT="+off.URL))
		tracedCalls(t, g)
		offLog = g.log.String()
	})
	wg.Wait()
	if got, want := rec.Names(), []string{"warden.tool_call " + toolDeleteNote, "warden.tool_call " + toolListNotes, "warden.tool_call " + toolWriteNote}; !slices.Equal(got, want) {
		t.Fatalf("OTEL_EXPORTER_OTLP_ENDPOINT: spans %v, want %v (receiver refused %v)", got, want, rec.Errors())
	}
	for _, s := range rec.Spans() {
		if s.Resource["service.name"] != "warden" {
			t.Errorf("span %s: service.name %q, want the default warden", s.Name, s.Resource["service.name"])
		}
	}
	if n := len(off.Requests()); n != 0 || len(off.Errors()) != 0 {
		t.Errorf("OTEL_SDK_DISABLED=true: the collector got %d export requests (and %v)", n, off.Errors())
	}
	if want := `msg="traces: off although the config has a traces section" reason="OTEL_SDK_DISABLED is true"`; !strings.Contains(offLog, want) {
		t.Errorf("OTEL_SDK_DISABLED=true: the log does not say %s:\n%s", want, offLog)
	}
}

// A collector that accepts connections and never answers: calls are not held up, and
// SIGTERM ends the gateway within the traces shutdown bound, saying spans were lost.
func TestServeTracesDeadCollector(t *testing.T) {
	t.Parallel()
	skipWithoutSignals(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	var held sync.WaitGroup
	held.Go(func() {
		var conns []net.Conn
		defer func() {
			for _, c := range conns {
				c.Close()
			}
		}()
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			conns = append(conns, c) // read nothing, answer nothing
		}
	})
	defer held.Wait()
	defer ln.Close()
	f := newNotesFixture(t, "", "1s")
	appendFile(t, f.config, "traces:\n  endpoint: http://"+ln.Addr().String()+"\n  timeout: 30s\n")
	g := startGateway(t, f.config, withoutOTEL(f.env))
	cs := connect(t, g.url, demoWriterToken)
	for range 3 {
		begin := time.Now()
		if res := callTool(t, cs, toolListNotes, map[string]any{}); res.IsError {
			t.Fatalf("list_notes with a dead collector: %s", mcptest.ResultText(res))
		}
		if took := time.Since(begin); took > 10*time.Second {
			t.Errorf("a call took %s with a dead collector", took)
		}
	}
	cs.Close()
	took := stopGateway(t, g)
	// The calls drain at once; the last spans get traceShutdownTimeout; the rest is the
	// upstream's stop and a loaded machine.
	if took > traceShutdownTimeout+20*time.Second {
		t.Errorf("the gateway took %s to exit with a dead collector", took)
	}
	if want := `msg="traces: the last spans may be lost" endpoint=http://` + ln.Addr().String() + `/v1/traces error="the last spans were not exported: context deadline exceeded"`; !strings.Contains(g.log.String(), want) {
		t.Errorf("the log does not say %s:\n%s", want, g.log.String())
	}
}

// A bad endpoint, in the section or in the environment, stops serve with a config
// error naming it; a bad section is an error of warden validate too.
func TestServeTracesBadSettings(t *testing.T) {
	dir := t.TempDir()
	policyPath, err := filepath.Abs(filepath.Join("..", "..", "examples", "gateway", "policy.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	cfg := gwConfig{policy: policyPath, store: "sqlite://" + filepath.Join(dir, "warden.db"), wait: "1s",
		servers: "  notes:\n    command: not-admitted\n", clients: []gwClient{writerClient}}
	config := filepath.Join(dir, "gateway.yaml")
	for _, v := range []string{"OTEL_SDK_DISABLED", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "OTEL_EXPORTER_OTLP_ENDPOINT"} {
		t.Setenv(v, "")
	}

	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "collector:4318")
	writeFile(t, config, cfg.yaml())
	r := runWarden(t, "serve", "-c", config)
	want := config + `: OTEL_EXPORTER_OTLP_ENDPOINT "collector:4318": want an http:// or https:// URL, e.g. http://127.0.0.1:4318`
	if r.code != exitUsage || !strings.Contains(r.stderr, want) {
		t.Errorf("bad OTEL_EXPORTER_OTLP_ENDPOINT: exit %d, stderr:\n%s\nwant exit %d and %q", r.code, r.stderr, exitUsage, want)
	}
	t.Setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "")

	writeFile(t, config, cfg.yaml()+"traces:\n  endpoint: localhost:4318\n  sample_ratio: 2\n")
	line := strings.Count(cfg.yaml(), "\n") + 2 // traces.endpoint's
	for _, args := range [][]string{{"serve", "-c", config}, {"validate", config}} {
		r := runWarden(t, args...)
		for _, want := range []string{
			config + ":" + strconv.Itoa(line) + `:13: traces.endpoint "localhost:4318" is not an http:// or https:// URL (write the collector's URL, e.g. http://127.0.0.1:4318 (spans go to its /v1/traces) or a URL with the full path)`,
			config + ":" + strconv.Itoa(line+1) + `:17: traces.sample_ratio: 2 is out of range (write a number from 0 (no call traced) to 1 (every call), e.g. 0.25)`,
		} {
			if r.code != exitUsage || !strings.Contains(r.stderr, want) {
				t.Errorf("warden %s: exit %d, stderr:\n%s\nwant exit %d and %q", args[0], r.code, r.stderr, exitUsage, want)
			}
		}
	}
	_ = os.Remove(config)
}
