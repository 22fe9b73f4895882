package gateway_test

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
)

func TestParseTracesSection(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	c, err := gateway.ParseFile(file, []byte(`policy: p.yaml
traces:
  endpoint: https://collector.example.com:4318
  headers:
    x-api-key: k-123
    Authorization: "Bearer abc"
  service_name: warden-eu
  stage_spans: true
  sample_ratio: 0.25
  timeout: 3s
`), cfgGetenv)
	if err != nil {
		t.Fatal(err)
	}
	ratio := 0.25
	want := &gateway.Traces{
		Endpoint: "https://collector.example.com:4318", Headers: map[string]string{"x-api-key": "k-123", "Authorization": "Bearer abc"},
		ServiceName: "warden-eu", StageSpans: true, SampleRatio: &ratio, Timeout: 3 * time.Second,
	}
	if diff := cmp.Diff(want, c.Traces); diff != "" {
		t.Errorf("traces (-want +got):\n%s", diff)
	}

	// An empty section turns export on with the defaults; no section leaves Traces nil.
	c, err = gateway.ParseFile(file, []byte("policy: p.yaml\ntraces: {}\n"), cfgGetenv)
	if err != nil || c.Traces == nil || c.Traces.Endpoint != "" || c.Traces.SampleRatio != nil {
		t.Errorf("traces: {} gave %+v, %v; want an empty section", c.Traces, err)
	}
	for _, r := range []string{"0", "1", "1.0", "0.5"} {
		if c, err := gateway.ParseFile(file, []byte("policy: p.yaml\ntraces:\n  sample_ratio: "+r+"\n"), cfgGetenv); err != nil || c.Traces.SampleRatio == nil {
			t.Errorf("sample_ratio %s: %v", r, err)
		}
	}
	c, err = gateway.ParseFile(file, []byte("policy: p.yaml\n"), cfgGetenv)
	if err != nil || c.Traces != nil {
		t.Errorf("no traces section gave %+v, %v; want nil", c.Traces, err)
	}
}

func TestParseTracesErrors(t *testing.T) {
	const urlHint = "write the collector's URL, e.g. http://127.0.0.1:4318 (spans go to its /v1/traces) or a URL with the full path"
	const ratioHint = "write a number from 0 (no call traced) to 1 (every call), e.g. 0.25"
	for _, c := range []struct {
		yaml      string
		line      int
		msg, hint string
	}{
		{"traces: on\n", 2, "traces must be a mapping, not a string", "write a mapping of endpoint, headers, service_name, stage_spans, sample_ratio, timeout, or `traces: {}` to export with the defaults and the OTEL_* variables"},
		{"traces:\n  endpont: http://c:4318\n", 3, `unknown key "endpont" in traces`, `known keys in traces: endpoint, headers, service_name, stage_spans, sample_ratio, timeout; did you mean "endpoint"?`},
		{"traces:\n  endpoint: 127.0.0.1:4318\n", 3, `traces.endpoint "127.0.0.1:4318" is not an http:// or https:// URL`, urlHint},
		{"traces:\n  endpoint: grpc://c:4317\n", 3, `traces.endpoint "grpc://c:4317" is not an http:// or https:// URL`, urlHint},
		{"traces:\n  endpoint: http://u:pw@c:4318\n", 3, `traces.endpoint "http://u:pw@c:4318" carries user info`, "send credentials in traces.headers (or OTEL_EXPORTER_OTLP_HEADERS) instead"},
		{"traces:\n  endpoint: http://c:4318/v1/traces?k=v\n", 3, `traces.endpoint "http://c:4318/v1/traces?k=v" has a query or fragment`, "remove it: the exporter posts to the URL's path only"},
		{"traces:\n  endpoint: ''\n", 3, "traces.endpoint is empty", "give it a value or leave the key out"},
		{"traces:\n  headers: [a]\n", 3, "traces.headers must be a mapping, not a list", `write a mapping of header names to values, e.g. {authorization: "Bearer ..."}`},
		{"traces:\n  headers:\n    bad header: x\n", 4, `traces.headers: "bad header" is not an HTTP header name`, "use letters, digits and - only, e.g. x-api-key"},
		{"traces:\n  headers:\n    x-key: \"a\\nb\"\n", 4, "traces.headers.x-key has a control character", "remove the line breaks and control characters"},
		{"traces:\n  headers:\n    x-key: 5\n", 4, "traces.headers.x-key must be a string, got a number", "quote it to make it a string"},
		{"traces:\n  service_name: ''\n", 3, "traces.service_name is empty", "give it a value or leave the key out"},
		{"traces:\n  stage_spans: yes\n", 3, "traces.stage_spans must be true or false, got a string", "write true or false"},
		{"traces:\n  sample_ratio: 1.5\n", 3, "traces.sample_ratio: 1.5 is out of range", ratioHint},
		{"traces:\n  sample_ratio: -0.1\n", 3, "traces.sample_ratio: -0.1 is out of range", ratioHint},
		{"traces:\n  sample_ratio: .nan\n", 3, "traces.sample_ratio: .nan is out of range", ratioHint},
		{"traces:\n  sample_ratio: half\n", 3, "traces.sample_ratio must be a number, got a string", ratioHint},
		{"traces:\n  timeout: 0s\n", 3, `traces.timeout "0s" is not a positive duration`, "write a positive Go duration such as 30s, 5m or 24h"},
	} {
		file := filepath.Join(t.TempDir(), "gateway.yaml")
		_, err := gateway.ParseFile(file, []byte("policy: p.yaml\n"+c.yaml), cfgGetenv)
		var ce *warden.ConfigError
		if !errors.As(err, &ce) || ce.Line != c.line || ce.Msg != c.msg || ce.Hint != c.hint {
			t.Errorf("%q:\n got %v\nwant line %d: %s (%s)", c.yaml, err, c.line, c.msg, c.hint)
		}
		if ce != nil && !strings.HasPrefix(ce.Error(), file+":") {
			t.Errorf("%q: error %q does not name the file", c.yaml, ce.Error())
		}
	}
}
