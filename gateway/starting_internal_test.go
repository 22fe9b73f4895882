package gateway

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"

	"github.com/wardenhq/warden/upstream"
)

// Before the wait for an upstream, the log says which one starts, and that a go run
// server compiles first; it never shows arguments, headers, or a URL's credentials,
// path or query.
func TestLogStarting(t *testing.T) {
	for _, c := range []struct {
		cfg  upstream.ServerConfig
		want string
	}{
		{upstream.ServerConfig{Name: "notes", Command: "go", Args: []string{"run", "./notes-server", "--token", "s3cret"}},
			`level=INFO msg="starting upstream server (building it with go run first: the first start can take a minute or more)" server=notes command=go`},
		{upstream.ServerConfig{Name: "fs", Command: "npx", Args: []string{"--api-key=s3cret"}},
			`level=INFO msg="starting upstream server" server=fs command=npx`},
		{upstream.ServerConfig{Name: "remote", URL: "https://user:s3cret@mcp.example.com:8443/s3cret/mcp?key=s3cret", Headers: map[string]string{"Authorization": "s3cret"}},
			`level=INFO msg="connecting to upstream server" server=remote url=https://mcp.example.com:8443`},
		{upstream.ServerConfig{Name: "odd", URL: "::not a url s3cret"},
			`level=INFO msg="connecting to upstream server" server=odd url="the configured URL"`},
	} {
		var buf bytes.Buffer
		log := slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{ReplaceAttr: func(_ []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey {
				return slog.Attr{}
			}
			return a
		}}))
		logStarting(log, c.cfg)
		got := strings.TrimSpace(buf.String())
		if got != c.want {
			t.Errorf("%s:\n got %s\nwant %s", c.cfg.Name, got, c.want)
		}
		if strings.Contains(got, "s3cret") {
			t.Errorf("%s: the log shows a secret: %s", c.cfg.Name, got)
		}
	}
}
