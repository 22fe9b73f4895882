// The traces section of a gateway config: OpenTelemetry export over OTLP/HTTP.

package gateway

import (
	"net/url"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/internal/yamlstrict"
)

// Traces is the traces section: where and how the gateway exports a span per call
// over OTLP/HTTP. A field left zero is left to the OTEL_* environment variables and
// the defaults (docs/gateway.md has the precedence). The section is read when the
// gateway starts; a reload does not change it.
type Traces struct {
	// Endpoint is the collector's http:// or https:// URL ("" = from the environment).
	Endpoint string
	// Headers are sent with every export request.
	Headers map[string]string
	// ServiceName is the resource's service.name ("" = OTEL_SERVICE_NAME or "warden").
	ServiceName string
	// StageSpans adds a child span per stage of a call.
	StageSpans bool
	// SampleRatio, when set, is the share of calls traced, from 0 to 1.
	SampleRatio *float64
	// Timeout bounds one export request (0 = OTEL_EXPORTER_OTLP_TIMEOUT or 10s).
	Timeout time.Duration
}

var tracesKeys = []string{"endpoint", "headers", "service_name", "stage_spans", "sample_ratio", "timeout"}

func (d *configDecoder) traces(n *yaml.Node) *Traces {
	t := &Traces{}
	if n.Kind != yaml.MappingNode {
		d.Fail(n, "write a mapping of "+strings.Join(tracesKeys, ", ")+", or `traces: {}` to export with the defaults and the OTEL_* variables", "traces must be a mapping, not %s", yamlstrict.KindName(n))
		return t
	}
	for _, kv := range d.Known(n, "traces", tracesKeys) {
		w := "traces." + kv.Key
		switch kv.Key {
		case "endpoint":
			if s, ok := d.NonEmpty(kv.Value, w); ok {
				d.otlpEndpoint(kv.Value, s)
				t.Endpoint = s
			}
		case "headers":
			t.Headers = d.otlpHeaders(kv.Value)
		case "service_name":
			t.ServiceName, _ = d.NonEmpty(kv.Value, w)
		case "stage_spans":
			t.StageSpans, _ = d.Bool(kv.Value, w)
		case "sample_ratio":
			t.SampleRatio = d.ratio(kv.Value, w)
		case "timeout":
			t.Timeout = d.duration(kv.Value, w)
		}
	}
	return t
}

// otlpEndpoint checks a collector URL as the exporter takes it (see otlp.ResolveEndpoint).
func (d *configDecoder) otlpEndpoint(n *yaml.Node, s string) {
	const hint = "write the collector's URL, e.g. http://127.0.0.1:4318 (spans go to its /v1/traces) or a URL with the full path"
	u, err := url.Parse(s)
	switch {
	case err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "":
		d.Fail(n, hint, "traces.endpoint %q is not an http:// or https:// URL", s)
	case u.User != nil:
		d.Fail(n, "send credentials in traces.headers (or OTEL_EXPORTER_OTLP_HEADERS) instead", "traces.endpoint %q carries user info", s)
	case u.RawQuery != "" || u.Fragment != "" || strings.HasSuffix(s, "?") || strings.HasSuffix(s, "#"):
		d.Fail(n, "remove it: the exporter posts to the URL's path only", "traces.endpoint %q has a query or fragment", s)
	}
}

// otlpHeaders reads {name: value}: names must be HTTP header names, values free of
// control characters.
func (d *configDecoder) otlpHeaders(n *yaml.Node) map[string]string {
	if n.Kind != yaml.MappingNode {
		d.Fail(n, "write a mapping of header names to values, e.g. {authorization: \"Bearer ...\"}", "traces.headers must be a mapping, not %s", yamlstrict.KindName(n))
		return nil
	}
	m := d.StrMap(n, "traces.headers")
	for i := 0; i+1 < len(n.Content); i += 2 {
		name, value := n.Content[i].Value, n.Content[i+1].Value
		if !isHeaderName(name) {
			d.Fail(n.Content[i], "use letters, digits and - only, e.g. x-api-key", "traces.headers: %q is not an HTTP header name", name)
			delete(m, name)
			continue
		}
		if strings.ContainsFunc(value, func(r rune) bool { return r < 0x20 && r != '\t' || r == 0x7f }) {
			d.Fail(n.Content[i+1], "remove the line breaks and control characters", "traces.headers.%s has a control character", name)
			delete(m, name)
		}
	}
	return m
}

// isHeaderName reports whether s is an HTTP field name (a token of RFC 9110).
func isHeaderName(s string) bool {
	if s == "" {
		return false
	}
	for _, r := range s {
		if r > 0x7e || r <= ' ' || strings.ContainsRune("\"(),/:;<=>?@[\\]{}", r) {
			return false
		}
	}
	return true
}

// ratio reads a number from 0 to 1.
func (d *configDecoder) ratio(n *yaml.Node, where string) *float64 {
	const hint = "write a number from 0 (no call traced) to 1 (every call), e.g. 0.25"
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!float" && n.ShortTag() != "!!int") {
		d.Fail(n, hint, "%s must be a number, got %s", where, yamlstrict.KindName(n))
		return nil
	}
	v, err := strconv.ParseFloat(n.Value, 64)
	if err != nil || !(v >= 0 && v <= 1) {
		d.Fail(n, hint, "%s: %s is out of range", where, n.Value)
		return nil
	}
	return &v
}
