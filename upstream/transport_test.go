package upstream_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/mcptest"
	"github.com/wardenhq/warden/upstream"
)

// The denial messages are pinned byte for byte: they are the ADR's (REFERENCE
// section 10) and operators match on them. Lists render as Python prints them.
func TestCheckCommand(t *testing.T) {
	allowAny := upstream.TransportPolicy{AllowCommands: true}
	allowList := upstream.TransportPolicy{AllowCommands: true, Commands: []string{"node", "npx"}}
	const disabled = "MCP command transport is disabled (allow_commands=false). Blocked command: "
	tests := []struct {
		name   string
		policy upstream.TransportPolicy
		cmd    string
		want   string // "" means allowed
	}{
		{"zero policy denies a bare name", upstream.TransportPolicy{}, "node", disabled + "'node'"},
		{"zero policy denies a path", upstream.TransportPolicy{}, "/usr/bin/node", disabled + "'/usr/bin/node'"},
		{"zero policy denies even an allowlisted name", upstream.TransportPolicy{Commands: []string{"node"}}, "node", disabled + "'node'"},

		{"no allowlist allows a bare name", allowAny, "node", ""},
		{"no allowlist still refuses a path", allowAny, "/usr/bin/node", "Command contains path separator: '/usr/bin/node'. Use bare command name 'node' instead."},
		{"no allowlist refuses a relative path", allowAny, "./server", "Command contains path separator: './server'. Use bare command name 'server' instead."},
		{"no allowlist refuses a backslash path", allowAny, `C:\tools\node.exe`, `Command contains path separator: 'C:\tools\node.exe'. Use bare command name 'node.exe' instead.`},

		{"allowlist exact match", allowList, "node", ""},
		{"allowlist second entry", allowList, "npx", ""},
		{"allowlist is case sensitive", allowList, "Node", "Command 'Node' not in allowlist. Allowed: ['node', 'npx']"},
		{"allowlist has no prefix match", allowList, "nodejs", "Command 'nodejs' not in allowlist. Allowed: ['node', 'npx']"},
		{"not in allowlist", allowList, "python", "Command 'python' not in allowlist. Allowed: ['node', 'npx']"},
		{"path whose basename is allowlisted", allowList, "/usr/bin/node", "Command contains path separator: '/usr/bin/node'. Use bare command name 'node' instead."},
		{"backslash path whose basename is allowlisted", allowList, `..\bin\npx`, `Command contains path separator: '..\bin\npx'. Use bare command name 'npx' instead.`},
		{"mixed separators", allowList, `a\b/npx`, `Command contains path separator: 'a\b/npx'. Use bare command name 'npx' instead.`},
		{"path whose basename is not allowlisted", allowList, "/usr/bin/python", "Command '/usr/bin/python' not in allowlist. Allowed: ['node', 'npx']"},
		{"backslash path whose basename is not allowlisted", allowList, `C:\py\python.exe`, `Command 'C:\py\python.exe' not in allowlist. Allowed: ['node', 'npx']`},
		{"trailing separator with allowlist", allowList, "/usr/bin/", "Command '/usr/bin/' not in allowlist. Allowed: ['node', 'npx']"},
		{"path that only looks like an allowlisted name", allowList, "node/", "Command 'node/' not in allowlist. Allowed: ['node', 'npx']"},

		{"empty", allowAny, "", `MCP command is not a valid command name (empty command name): ""`},
		{"leading space", allowAny, " node", `MCP command is not a valid command name (command name has leading or trailing white space): " node"`},
		{"trailing newline", allowList, "node\n", `MCP command is not a valid command name (command name has leading or trailing white space): "node\n"`},
		{"NUL", allowAny, "no\x00de", `MCP command is not a valid command name (command name holds a NUL byte): "no\x00de"`},
		{"dot dot", allowAny, "..", `MCP command is not a valid command name (not a command name): ".."`},
		{"trailing separator without allowlist", allowAny, "/usr/bin/", `MCP command is not a valid command name (path without a program name): "/usr/bin/"`},
		{"invalid name with allowlist is still invalid", allowList, "", `MCP command is not a valid command name (empty command name): ""`},

		{"python repr quoting", upstream.TransportPolicy{AllowCommands: true, Commands: []string{"node", "it's", `a"b`}}, "x", `Command 'x' not in allowlist. Allowed: ['node', "it's", 'a"b']`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.CheckCommand(tt.cmd)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckCommand(%q) = %v, want allowed", tt.cmd, err)
				}
				return
			}
			var d *upstream.DeniedError
			if !errors.As(err, &d) {
				t.Fatalf("CheckCommand(%q) = %v (%T), want *DeniedError", tt.cmd, err, err)
			}
			if d.Message != tt.want || err.Error() != tt.want {
				t.Errorf("CheckCommand(%q)\n got %q\nwant %q", tt.cmd, err.Error(), tt.want)
			}
			if d.Transport != "command" || d.Target != tt.cmd || d.Server != "" {
				t.Errorf("DeniedError = %+v, want Transport command, Target %q, no Server", d, tt.cmd)
			}
		})
	}
}

func TestCheckURL(t *testing.T) {
	on := upstream.TransportPolicy{AllowURLs: true}
	loop := upstream.TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true}
	hosts := upstream.TransportPolicy{AllowURLs: true, Hosts: []string{"Example.com", "::1"}}
	hostsLoop := upstream.TransportPolicy{AllowURLs: true, AllowInsecureLoopback: true, Hosts: []string{"example.com"}}
	scheme := func(s, u string) string {
		return "MCP URL transport requires https or wss scheme. Got '" + s + "' in URL: '" + u + "'"
	}
	loopOnly := func(s, h, u string) string {
		return "MCP URL transport allows plain '" + s + "' only to a loopback host (127.0.0.0/8, ::1, localhost). Got host '" + h + "' in URL: '" + u + "'"
	}
	tests := []struct {
		name   string
		policy upstream.TransportPolicy
		url    string
		want   string // "" means allowed; a trailing "*" means "starts with"
		target string // the DeniedError's Target; "" means the URL itself
	}{
		{"zero policy denies", upstream.TransportPolicy{}, "https://example.com/mcp", "MCP URL transport is disabled (allow_urls=false). Blocked URL: 'https://example.com/mcp'", ""},
		{"zero policy denies loopback", upstream.TransportPolicy{AllowInsecureLoopback: true}, "http://127.0.0.1/mcp", "MCP URL transport is disabled (allow_urls=false). Blocked URL: 'http://127.0.0.1/mcp'", ""},
		{"disabled message drops the query", upstream.TransportPolicy{}, "https://example.com/mcp?token=s3cret#frag", "MCP URL transport is disabled (allow_urls=false). Blocked URL: 'https://example.com/mcp'", "https://example.com/mcp"},

		{"https", on, "https://example.com/mcp", "", ""},
		{"wss", on, "wss://example.com/ws", "", ""},
		{"upper-case scheme and host", on, "HTTPS://EXAMPLE.com/mcp", "", ""},
		{"http without the switch", on, "http://example.com/mcp", scheme("http", "http://example.com/mcp"), ""},
		{"ws without the switch", on, "ws://example.com/", scheme("ws", "ws://example.com/"), ""},
		{"ftp", on, "ftp://example.com/x", scheme("ftp", "ftp://example.com/x"), ""},
		{"file", loop, "file://localhost/etc/passwd", scheme("file", "file://localhost/etc/passwd"), ""},
		{"scheme message drops the query", on, "http://example.com/mcp?key=s3cret", scheme("http", "http://example.com/mcp"), "http://example.com/mcp"},

		{"http loopback without the switch", on, "http://127.0.0.1:3001/mcp", scheme("http", "http://127.0.0.1:3001/mcp"), ""},
		{"http localhost without the switch", on, "http://localhost:3001/mcp", scheme("http", "http://localhost:3001/mcp"), ""},
		{"http loopback with the switch", loop, "http://127.0.0.1:3001/mcp", "", ""},
		{"http 127/8 with the switch", loop, "http://127.5.6.7/mcp", "", ""},
		{"http localhost with the switch", loop, "http://localhost:3001/mcp", "", ""},
		{"http LOCALHOST with the switch", loop, "http://LOCALHOST/mcp", "", ""},
		{"http IPv6 loopback with the switch", loop, "http://[::1]:3001/mcp", "", ""},
		{"http IPv4-mapped loopback with the switch", loop, "http://[::ffff:127.0.0.1]/mcp", "", ""},
		{"ws loopback with the switch", loop, "ws://localhost/ws", "", ""},
		{"https loopback needs no switch", on, "https://127.0.0.1/mcp", "", ""},
		{"http to a non-loopback host with the switch", loop, "http://example.com/mcp", loopOnly("http", "example.com", "http://example.com/mcp"), ""},
		{"http to localhost.evil.com", loop, "http://localhost.evil.com/mcp", loopOnly("http", "localhost.evil.com", "http://localhost.evil.com/mcp"), ""},
		{"http to 127.0.0.1.evil.com", loop, "http://127.0.0.1.evil.com/", loopOnly("http", "127.0.0.1.evil.com", "http://127.0.0.1.evil.com/"), ""},
		{"http to all interfaces", loop, "http://0.0.0.0:3001/", loopOnly("http", "0.0.0.0", "http://0.0.0.0:3001/"), ""},
		{"http to IPv6 unspecified", loop, "http://[::]/", loopOnly("http", "::", "http://[::]/"), ""},
		{"http to a zoned IPv6 loopback", loop, "http://[::1%25eth0]/", loopOnly("http", "::1%eth0", "http://[::1%25eth0]/"), ""},
		{"http to a private address", loop, "http://10.0.0.1/", loopOnly("http", "10.0.0.1", "http://10.0.0.1/"), ""},
		{"ws to a non-loopback host with the switch", loop, "ws://example.com/", loopOnly("ws", "example.com", "ws://example.com/"), ""},

		{"host allowlist is case-insensitive", hosts, "https://EXAMPLE.COM/mcp", "", ""},
		{"host allowlist ignores the port", hosts, "https://example.com:8443/mcp", "", ""},
		{"host allowlist IPv6", hosts, "https://[::1]:8443/mcp", "", ""},
		{"host allowlist has no subdomain match", hosts, "https://api.example.com/mcp", "Host 'api.example.com' not in allowlist. Allowed: ['Example.com', '::1']", ""},
		{"host allowlist has no suffix trick", hosts, "https://example.com.evil.com/mcp", "Host 'example.com.evil.com' not in allowlist. Allowed: ['Example.com', '::1']", ""},
		{"host allowlist reports the host lower-cased", hosts, "https://EVIL.com/", "Host 'evil.com' not in allowlist. Allowed: ['Example.com', '::1']", ""},
		{"host allowlist applies to loopback", hostsLoop, "http://localhost:3001/mcp", "Host 'localhost' not in allowlist. Allowed: ['example.com']", ""},
		{"scheme is checked before the allowlist", hostsLoop, "http://example.com/mcp", loopOnly("http", "example.com", "http://example.com/mcp"), ""},

		{"userinfo trick", hosts, "https://example.com@evil.com/mcp", "MCP URL must not contain user info before '@'; it would connect to host 'evil.com'. Put credentials in headers: 'https://evil.com/mcp'", "https://evil.com/mcp"},
		{"userinfo with password", on, "https://user:s3cret@example.com/mcp", "MCP URL must not contain user info before '@'; it would connect to host 'example.com'. Put credentials in headers: 'https://example.com/mcp'", "https://example.com/mcp"},
		{"userinfo to loopback", loop, "http://localhost@evil.com/", "MCP URL must not contain user info before '@'; it would connect to host 'evil.com'. Put credentials in headers: 'http://evil.com/'", "http://evil.com/"},
		{"empty userinfo", on, "https://@example.com/", "MCP URL must not contain user info before '@'; it would connect to host 'example.com'. Put credentials in headers: 'https://example.com/'", "https://example.com/"},

		{"no host", on, "https:///mcp", "MCP URL has no host: 'https:///mcp'", ""},
		{"port only", on, "https://:443/mcp", "MCP URL has no host: 'https://:443/mcp'", ""},
		{"no scheme", on, "example.com/mcp", `MCP URL is not a valid absolute URL (want scheme://host/path): "example.com/mcp"`, ""},
		{"opaque", on, "https:example.com", `MCP URL is not a valid absolute URL (want scheme://host/path): "https:example.com"`, ""},
		{"empty", on, "", `MCP URL is not a valid absolute URL (want scheme://host/path): ""`, ""},
		{"surrounding space", on, " https://example.com/", `MCP URL is not a valid absolute URL (leading or trailing white space): " https://example.com/"`, ""},
		{"unparsable", on, "https://exa mple.com/", `MCP URL is not a valid absolute URL (*`, ""},
		{"control character", on, "https://example.com/\x7f", `MCP URL is not a valid absolute URL (*`, ""},
		{"unparsable hides the query", on, "https://us er:pw@exa mple.com/?token=s3cret", `MCP URL is not a valid absolute URL (*`, "https://exa mple.com/"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.CheckURL(tt.url)
			if tt.want == "" {
				if err != nil {
					t.Fatalf("CheckURL(%q) = %v, want allowed", tt.url, err)
				}
				return
			}
			var d *upstream.DeniedError
			if !errors.As(err, &d) {
				t.Fatalf("CheckURL(%q) = %v (%T), want *DeniedError", tt.url, err, err)
			}
			if prefix, ok := strings.CutSuffix(tt.want, "*"); ok {
				if !strings.HasPrefix(err.Error(), prefix) {
					t.Errorf("CheckURL(%q)\n got %q\nwant prefix %q", tt.url, err.Error(), prefix)
				}
			} else if err.Error() != tt.want {
				t.Errorf("CheckURL(%q)\n got %q\nwant %q", tt.url, err.Error(), tt.want)
			}
			target := tt.target
			if target == "" {
				target = tt.url
			}
			if d.Transport != "url" || d.Target != target {
				t.Errorf("DeniedError Transport %q Target %q, want url, %q", d.Transport, d.Target, target)
			}
			if strings.Contains(err.Error(), "s3cret") || strings.Contains(d.Target, "s3cret") {
				t.Errorf("denial leaks a secret: %q, target %q", err.Error(), d.Target)
			}
		})
	}
}

func TestValidate(t *testing.T) {
	var zero upstream.TransportPolicy
	if err := zero.Validate(); err != nil {
		t.Fatalf("zero policy: %v", err)
	}
	good := upstream.TransportPolicy{AllowCommands: true, Commands: []string{"node", "uvx"}, AllowURLs: true,
		Hosts: []string{"example.com", "127.0.0.1", "::1"}, EnvDeny: []string{"TOKEN"}, MaxConnectionsPerServer: 2}
	if err := good.Validate(); err != nil {
		t.Fatalf("good policy: %v", err)
	}
	tests := []struct {
		name   string
		policy upstream.TransportPolicy
		want   string
	}{
		{"negative max", upstream.TransportPolicy{MaxConnectionsPerServer: -1}, "max connections per server must be 0 (default 5) or more, got -1"},
		{"empty command", upstream.TransportPolicy{Commands: []string{""}}, `commands[0] "": empty command name`},
		{"command path", upstream.TransportPolicy{Commands: []string{"node", "/usr/bin/node"}}, `commands[1] "/usr/bin/node": a bare command name holds no '/' or '\'`},
		{"command backslash", upstream.TransportPolicy{Commands: []string{`bin\node`}}, `commands[0] "bin\\node": a bare command name holds no '/' or '\'`},
		{"command space", upstream.TransportPolicy{Commands: []string{"node "}}, `commands[0] "node ": command name has leading or trailing white space`},
		{"empty host", upstream.TransportPolicy{Hosts: []string{""}}, `hosts[0] "": empty host`},
		{"host with scheme", upstream.TransportPolicy{Hosts: []string{"https://example.com"}}, `hosts[0] "https://example.com": give the hostname only, without a scheme`},
		{"host with port", upstream.TransportPolicy{Hosts: []string{"example.com:443"}}, `hosts[0] "example.com:443": give the hostname only, without a port`},
		{"host with path", upstream.TransportPolicy{Hosts: []string{"example.com/mcp"}}, `hosts[0] "example.com/mcp": give the hostname only, without path, query or user info`},
		{"host with user", upstream.TransportPolicy{Hosts: []string{"me@example.com"}}, `hosts[0] "me@example.com": give the hostname only, without path, query or user info`},
		{"bracketed IPv6", upstream.TransportPolicy{Hosts: []string{"[::1]"}}, `hosts[0] "[::1]": give an IPv6 address without brackets, e.g. ::1`},
		{"empty env pattern", upstream.TransportPolicy{EnvDeny: []string{"TOKEN", " "}}, `env_deny[1] " ": a pattern must be non-empty and hold no '=' or NUL (to keep every variable, set keep_secret_env)`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.policy.Validate()
			if err == nil || err.Error() != tt.want {
				t.Errorf("Validate() = %v, want %q", err, tt.want)
			}
		})
	}
	t.Run("every problem at once", func(t *testing.T) {
		p := upstream.TransportPolicy{MaxConnectionsPerServer: -3, Commands: []string{"a/b"}, Hosts: []string{"h:1"}}
		err := p.Validate()
		if err == nil || strings.Count(err.Error(), "\n") != 2 {
			t.Errorf("Validate() = %v, want three joined errors", err)
		}
	})
}

func TestMaxConns(t *testing.T) {
	for _, tt := range []struct{ set, want int }{{0, upstream.DefaultMaxConnections}, {1, 1}, {12, 12}, {-1, 1}} {
		p := upstream.TransportPolicy{MaxConnectionsPerServer: tt.set}
		if got := p.MaxConns(); got != tt.want {
			t.Errorf("MaxConns() with %d = %d, want %d", tt.set, got, tt.want)
		}
	}
	if upstream.DefaultMaxConnections != 5 {
		t.Errorf("DefaultMaxConnections = %d, want 5", upstream.DefaultMaxConnections)
	}
}

func TestDefaultEnvDenyPatterns(t *testing.T) {
	want := []string{"API_KEY", "API_SECRET", "API_TOKEN", "ACCESS_TOKEN", "AUTH_TOKEN", "AWS_SECRET",
		"AWS_SESSION_TOKEN", "CREDENTIAL", "DATABASE_URL", "DB_PASSWORD", "PASSWORD", "PRIVATE_KEY",
		"REFRESH_TOKEN", "SECRET_KEY", "SERVICE_TOKEN", "TOKEN", "SECRET"}
	got := upstream.DefaultEnvDenyPatterns()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("DefaultEnvDenyPatterns() (-want +got):\n%s", diff)
	}
	got[0] = "CHANGED"
	if again := upstream.DefaultEnvDenyPatterns(); again[0] != "API_KEY" {
		t.Fatalf("changing the returned slice changed the defaults: %q", again[0])
	}
}

func TestChildEnv(t *testing.T) {
	base := []string{
		"PATH=/usr/bin:/bin",
		"HOME=/home/me",
		"GITHUB_TOKEN=ghp_inherited",
		"MY_PASSWORD_FILE=/run/pw",
		"aws_secret_access_key=lower",
		"DATABASE_URL=postgres://u:p@db/x",
		"OPENAI_API_KEY=sk-x",
		"GOOGLE_APPLICATION_CREDENTIALS=/k.json",
		"SSH_PRIVATE_KEY=k",
		"LANG=C.UTF-8",
		"NOEQUALS",
		"=C:=C:\\",
		"DUP=first",
		"DUP=second",
		"EMPTY=",
		"WITH_EQUALS=a=b",
	}
	extra := map[string]string{
		"NOTES_DIR":          "/srv/notes",
		"LANG":               "en_US.UTF-8", // extra wins over base
		"SLACK_BOT_TOKEN":    "xoxb-configured",
		"Client_Secret":      "configured",
		"NUL_VALUE":          "a\x00b",
		"BAD=KEY":            "x",
		"ANTHROPIC_API_KEY":  "configured",
		"REFRESH_TOKEN_PATH": "/tmp/rt",
	}
	baseCopy := slices.Clone(base)

	t.Run("default patterns", func(t *testing.T) {
		var p upstream.TransportPolicy
		want := []string{
			"DUP=second",
			"EMPTY=",
			"HOME=/home/me",
			"LANG=en_US.UTF-8",
			"NOTES_DIR=/srv/notes",
			"PATH=/usr/bin:/bin",
			"WITH_EQUALS=a=b",
		}
		if diff := cmp.Diff(want, p.ChildEnv(base, extra)); diff != "" {
			t.Errorf("ChildEnv (-want +got):\n%s", diff)
		}
	})
	t.Run("empty EnvDeny means the defaults", func(t *testing.T) {
		p := upstream.TransportPolicy{EnvDeny: []string{}}
		if got := p.ChildEnv([]string{"GITHUB_TOKEN=x", "A=1"}, nil); !slices.Equal(got, []string{"A=1"}) {
			t.Errorf("ChildEnv = %q, want [A=1]", got)
		}
	})
	t.Run("KeepSecretEnv", func(t *testing.T) {
		p := upstream.TransportPolicy{KeepSecretEnv: true}
		got := p.ChildEnv(base, extra)
		for _, kv := range []string{"GITHUB_TOKEN=ghp_inherited", "aws_secret_access_key=lower", "SLACK_BOT_TOKEN=xoxb-configured", "DATABASE_URL=postgres://u:p@db/x"} {
			if !slices.Contains(got, kv) {
				t.Errorf("ChildEnv with KeepSecretEnv lacks %q: %q", kv, got)
			}
		}
		for _, kv := range got {
			if strings.HasPrefix(kv, "NOEQUALS") || strings.HasPrefix(kv, "=") || strings.Contains(kv, "\x00") || strings.HasPrefix(kv, "BAD=KEY") {
				t.Errorf("ChildEnv with KeepSecretEnv kept malformed %q", kv)
			}
		}
		if !slices.IsSorted(got) {
			t.Errorf("ChildEnv not sorted: %q", got)
		}
	})
	t.Run("custom patterns replace the defaults and are case-insensitive", func(t *testing.T) {
		p := upstream.TransportPolicy{EnvDeny: []string{"home", "LANG"}}
		got := p.ChildEnv([]string{"HOME=/h", "GITHUB_TOKEN=t", "LANGUAGE=x", "PATH=/p"}, map[string]string{"lang": "x"})
		if want := []string{"GITHUB_TOKEN=t", "PATH=/p"}; !slices.Equal(got, want) {
			t.Errorf("ChildEnv = %q, want %q", got, want)
		}
	})
	t.Run("never nil", func(t *testing.T) {
		var p upstream.TransportPolicy
		if got := p.ChildEnv(nil, nil); got == nil || len(got) != 0 {
			t.Errorf("ChildEnv(nil, nil) = %#v, want empty non-nil", got)
		}
		if got := p.ChildEnv([]string{"API_KEY=x"}, nil); got == nil {
			t.Errorf("ChildEnv with everything filtered = nil, want empty non-nil")
		}
	})
	t.Run("deterministic and does not modify inputs", func(t *testing.T) {
		var p upstream.TransportPolicy
		first := p.ChildEnv(base, extra)
		for range 20 {
			if got := p.ChildEnv(base, extra); !slices.Equal(got, first) {
				t.Fatalf("ChildEnv not deterministic: %q vs %q", got, first)
			}
		}
		if !slices.Equal(base, baseCopy) || extra["LANG"] != "en_US.UTF-8" || len(extra) != 8 {
			t.Errorf("ChildEnv modified its inputs")
		}
	})
}

func TestAdmit(t *testing.T) {
	ctx := context.Background()
	cmdServer := upstream.ServerConfig{Name: "files", Command: "/usr/bin/node", Args: []string{"server.js"}}
	urlServer := upstream.ServerConfig{Name: "remote", URL: "http://example.com/mcp?api_key=s3cret", Headers: map[string]string{"Authorization": "Bearer t"}}

	t.Run("denied command emits one event", func(t *testing.T) {
		var rec warden.Recorder
		p := upstream.TransportPolicy{AllowCommands: true, Commands: []string{"node"}}
		err := p.Admit(ctx, cmdServer, &rec)
		var d *upstream.DeniedError
		if !errors.As(err, &d) {
			t.Fatalf("Admit = %v, want *DeniedError", err)
		}
		want := upstream.DeniedError{Server: "files", Transport: "command", Target: "/usr/bin/node",
			Message: "Command contains path separator: '/usr/bin/node'. Use bare command name 'node' instead."}
		if *d != want {
			t.Errorf("Admit error = %+v, want %+v", *d, want)
		}
		events := rec.Events()
		if len(events) != 1 {
			t.Fatalf("got %d events, want 1: %+v", len(events), events)
		}
		e := events[0]
		if e.Name != warden.EventTransportDenied || e.Checker != "transport" || e.Tool != "" ||
			e.Target != "/usr/bin/node" || e.Reason != want.Message || e.Time.IsZero() {
			t.Errorf("event = %+v", e)
		}
		if !strings.Contains(e.Detail, `"files"`) || !strings.Contains(e.Detail, want.Message) {
			t.Errorf("event Detail %q should name the server and hold the message", e.Detail)
		}
	})
	t.Run("denied URL event drops the query", func(t *testing.T) {
		var rec warden.Recorder
		p := upstream.TransportPolicy{AllowURLs: true}
		err := p.Admit(ctx, urlServer, &rec)
		wantMsg := "MCP URL transport requires https or wss scheme. Got 'http' in URL: 'http://example.com/mcp'"
		if err == nil || err.Error() != wantMsg {
			t.Fatalf("Admit = %v, want %q", err, wantMsg)
		}
		events := rec.Named(warden.EventTransportDenied)
		if len(events) != 1 || len(rec.Events()) != 1 {
			t.Fatalf("got %d events, want exactly 1", len(rec.Events()))
		}
		if e := events[0]; e.Target != "http://example.com/mcp" || e.Reason != wantMsg {
			t.Errorf("event Target %q Reason %q", e.Target, e.Reason)
		}
		if strings.Contains(events[0].Detail, "s3cret") {
			t.Errorf("event leaks the query: %q", events[0].Detail)
		}
	})
	t.Run("zero policy denies both transports", func(t *testing.T) {
		var rec warden.Recorder
		var p upstream.TransportPolicy
		for _, s := range []upstream.ServerConfig{{Name: "c", Command: "node"}, {Name: "u", URL: "https://example.com/mcp"}} {
			var d *upstream.DeniedError
			if err := p.Admit(ctx, s, &rec); !errors.As(err, &d) || d.Server != s.Name {
				t.Errorf("Admit(%s) = %v, want *DeniedError for it", s.Name, err)
			}
		}
		if n := len(rec.Named(warden.EventTransportDenied)); n != 2 {
			t.Errorf("got %d denial events, want 2", n)
		}
	})
	t.Run("allowed emits nothing", func(t *testing.T) {
		var rec warden.Recorder
		p := upstream.TransportPolicy{AllowCommands: true, Commands: []string{"node"}, AllowURLs: true, AllowInsecureLoopback: true}
		for _, s := range []upstream.ServerConfig{{Name: "c", Command: "node"}, {Name: "u", URL: "http://127.0.0.1:3001/mcp"}} {
			if err := p.Admit(ctx, s, &rec); err != nil {
				t.Errorf("Admit(%s) = %v, want nil", s.Name, err)
			}
		}
		if n := len(rec.Events()); n != 0 {
			t.Errorf("got %d events on allow, want 0", n)
		}
	})
	t.Run("nil sink", func(t *testing.T) {
		var p upstream.TransportPolicy
		var d *upstream.DeniedError
		if err := p.Admit(ctx, cmdServer, nil); !errors.As(err, &d) {
			t.Errorf("Admit with nil sink = %v, want *DeniedError", err)
		}
	})
	t.Run("panicking sink cannot turn a denial into an allow", func(t *testing.T) {
		var p upstream.TransportPolicy
		sink := warden.SinkFunc(func(context.Context, warden.Event) { panic("sink exploded") })
		var d *upstream.DeniedError
		if err := p.Admit(ctx, cmdServer, sink); !errors.As(err, &d) {
			t.Errorf("Admit with panicking sink = %v, want *DeniedError", err)
		}
	})
	t.Run("invalid server config is an error without an event", func(t *testing.T) {
		var rec warden.Recorder
		p := upstream.TransportPolicy{AllowCommands: true, AllowURLs: true}
		for _, s := range []upstream.ServerConfig{
			{Name: "both", Command: "node", URL: "https://example.com"},
			{Name: "neither"},
			{Name: "bad name!", Command: "node"},
		} {
			err := p.Admit(ctx, s, &rec)
			var d *upstream.DeniedError
			if err == nil || errors.As(err, &d) {
				t.Errorf("Admit(%+v) = %v, want a configuration error", s, err)
			}
		}
		if n := len(rec.Events()); n != 0 {
			t.Errorf("got %d events for configuration errors, want 0", n)
		}
	})
	t.Run("invalid policy is an error without an event", func(t *testing.T) {
		var rec warden.Recorder
		p := upstream.TransportPolicy{AllowCommands: true, MaxConnectionsPerServer: -1}
		err := p.Admit(ctx, upstream.ServerConfig{Name: "c", Command: "node"}, &rec)
		if err == nil || !strings.Contains(err.Error(), "transport policy: max connections") {
			t.Errorf("Admit with invalid policy = %v", err)
		}
		if n := len(rec.Events()); n != 0 {
			t.Errorf("got %d events, want 0", n)
		}
	})
}

// startIfAdmitted does what a gateway does with a command server: admit it, and only
// then start it with the filtered environment.
func startIfAdmitted(t *testing.T, p *upstream.TransportPolicy, s upstream.ServerConfig, sink warden.Sink) error {
	t.Helper()
	if err := p.Admit(context.Background(), s, sink); err != nil {
		return err
	}
	cmd := exec.Command(s.Command, s.Args...)
	cmd.Env = p.ChildEnv(os.Environ(), s.Env)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("admitted server failed: %v: %s", err, out)
	}
	return nil
}

// A denied server is never started: the same configuration that, admitted, runs a
// real process and leaves a marker file leaves nothing when denied.
func TestDeniedCommandNeverStarts(t *testing.T) {
	if _, err := exec.LookPath("sh"); err != nil {
		t.Skip("needs sh")
	}
	t.Setenv("WARDEN_TEST_GITHUB_TOKEN", "ghp_should_not_leak")
	dir := t.TempDir()
	marker := filepath.Join(dir, "started")
	server := upstream.ServerConfig{
		Name:    "marker",
		Command: "sh",
		Args:    []string{"-c", `env > "$MARKER"`},
		Env:     map[string]string{"MARKER": marker, "MARKER_API_KEY": "configured-secret"},
	}

	for _, p := range []upstream.TransportPolicy{
		{},
		{AllowCommands: false, Commands: []string{"sh"}},
		{AllowCommands: true, Commands: []string{"node"}},
	} {
		var rec warden.Recorder
		var d *upstream.DeniedError
		if err := startIfAdmitted(t, &p, server, &rec); !errors.As(err, &d) {
			t.Fatalf("policy %+v: Admit = %v, want *DeniedError", p, err)
		}
		if _, err := os.Stat(marker); !errors.Is(err, os.ErrNotExist) {
			t.Fatalf("policy %+v: the denied server ran (marker: %v)", p, err)
		}
		if n := len(rec.Named(warden.EventTransportDenied)); n != 1 {
			t.Fatalf("policy %+v: %d denial events, want 1", p, n)
		}
	}

	// Control: the same server, admitted, really runs, with secrets filtered from
	// what it inherits and from what it is configured with.
	p := upstream.TransportPolicy{AllowCommands: true, Commands: []string{"sh"}}
	if err := startIfAdmitted(t, &p, server, nil); err != nil {
		t.Fatalf("Admit = %v, want nil", err)
	}
	env, err := os.ReadFile(marker)
	if err != nil {
		t.Fatalf("admitted server did not run: %v", err)
	}
	for _, secret := range []string{"ghp_should_not_leak", "configured-secret"} {
		if strings.Contains(string(env), secret) {
			t.Errorf("child environment holds %q:\n%s", secret, env)
		}
	}
	if !strings.Contains(string(env), "MARKER="+marker) {
		t.Errorf("child environment lacks the configured MARKER:\n%s", env)
	}
}

// The reference server, admitted by a command allowlist, starts with the filtered
// environment and serves tools; the same server is refused when node is not listed.
func TestAdmitEverythingServer(t *testing.T) {
	command, args := mcptest.EverythingServer(t)
	server := upstream.ServerConfig{Name: "everything", Command: command, Args: args}

	var rec warden.Recorder
	deny := upstream.TransportPolicy{AllowCommands: true, Commands: []string{"npx"}}
	if err := deny.Admit(t.Context(), server, &rec); err == nil || err.Error() != "Command 'node' not in allowlist. Allowed: ['npx']" {
		t.Fatalf("Admit with npx only = %v", err)
	}

	p := upstream.TransportPolicy{AllowCommands: true, Commands: []string{"node"}}
	if err := p.Admit(t.Context(), server, &rec); err != nil {
		t.Fatalf("Admit = %v", err)
	}
	cmd := exec.Command(server.Command, server.Args...)
	cmd.Env = p.ChildEnv(os.Environ(), server.Env)
	client := mcp.NewClient(&mcp.Implementation{Name: "transport-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: cmd, TerminateDuration: time.Second}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	defer cs.Close()
	res, err := cs.ListTools(t.Context(), nil)
	if err != nil || len(res.Tools) == 0 {
		t.Fatalf("tools/list = %v, %v", res, err)
	}
	if n := len(rec.Events()); n != 1 {
		t.Errorf("got %d events, want 1 (the npx-only denial)", n)
	}
}
