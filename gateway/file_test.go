package gateway_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/upstream"
)

func cfgGetenv(name string) string {
	return map[string]string{
		"READER_TOKEN": "reader-token-0123456789",
		"OPS_TOKEN":    "operator-token-0123456789",
		"SAME_TOKEN":   "reader-token-0123456789", // READER_TOKEN's value again
		"SHORT_TOKEN":  "short",
		"REMOTE_TOKEN": "remote-secret",
	}[name]
}

func TestParseConfigFull(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "gateway.yaml")
	writerHash := inbox.HashToken("writer-token-0123456789")
	data := `# every key
policy: policy.yaml
shadow_policy: policies/candidate.yaml
store: sqlite://data/w.db
transport:
  allow_commands: true
  commands: [notes-server]
  allow_urls: true
  hosts: [mcp.example.com]
  allow_insecure_loopback: true
  keep_secret_env: false
  env_deny: [MY_SECRET]
  max_connections_per_server: 3
servers:
  remote:
    url: https://mcp.example.com/mcp
    headers:
      Authorization: "Bearer ${REMOTE_TOKEN}"
    prefix: ""
  notes:
    command: notes-server
    args: [-dir, notes]
    env: {NOTES_MODE: rw}
    dir: work
listen: 127.0.0.1:8080
path: /gw
stdio:
  principal: local-user
  tenant: acme
  role: writer
  self_approve: true
clients:
  - principal: reader-agent
    role: reader
    token_env: READER_TOKEN
    self_approve: false
  - principal: writer-agent
    tenant: acme
    role: writer
    token_sha256: ` + writerHash + `
operators:
  - name: ops
    token_env: OPS_TOKEN
ui:
  path: /inbox/
approvals:
  wait: 45s
  expires: 12h
  elicitation: never
limits:
  max_request_bytes: 2MiB
  call_timeout: 90s
  cancel_grace: 750ms
  session_idle: 10m
audit:
  redact_args: true
`
	got, err := gateway.ParseFile(file, []byte(data), cfgGetenv)
	if err != nil {
		t.Fatalf("ParseConfig: %v", err)
	}
	empty := ""
	want := &gateway.File{
		File:         file,
		Policy:       filepath.Join(dir, "policy.yaml"),
		ShadowPolicy: filepath.Join(dir, "policies", "candidate.yaml"),
		Store:        "sqlite://" + filepath.Join(dir, "data", "w.db"),
		Transport: upstream.TransportPolicy{
			AllowCommands: true, Commands: []string{"notes-server"},
			AllowURLs: true, Hosts: []string{"mcp.example.com"}, AllowInsecureLoopback: true,
			EnvDeny: []string{"MY_SECRET"}, MaxConnectionsPerServer: 3,
		},
		Servers: []upstream.ServerConfig{
			{Name: "notes", Command: "notes-server", Args: []string{"-dir", "notes"}, Env: map[string]string{"NOTES_MODE": "rw"}, Dir: filepath.Join(dir, "work")},
			{Name: "remote", URL: "https://mcp.example.com/mcp", Headers: map[string]string{"Authorization": "Bearer remote-secret"}, Prefix: &empty},
		},
		Listen: "127.0.0.1:8080",
		Path:   "/gw",
		Stdio:  gateway.Client{Principal: "local-user", Tenant: "acme", Role: "writer", SelfApprove: true},
		Clients: []gateway.Client{
			{Principal: "reader-agent", Role: "reader", TokenHash: inbox.HashToken("reader-token-0123456789")},
			{Principal: "writer-agent", Tenant: "acme", Role: "writer", TokenHash: writerHash},
		},
		Operators:       []inbox.Operator{{Name: "ops", TokenHash: inbox.HashToken("operator-token-0123456789")}},
		UIPath:          "/inbox/",
		ApprovalWait:    45 * time.Second,
		ApprovalExpiry:  12 * time.Hour,
		Elicitation:     false,
		MaxRequestBytes: 2 << 20,
		CallTimeout:     90 * time.Second,
		CancelGrace:     750 * time.Millisecond,
		SessionIdle:     10 * time.Minute,
		RedactArgs:      true,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ParseConfig (-want +got):\n%s", diff)
	}
	if got.Servers[1].ToolPrefix() != "" || got.Servers[0].ToolPrefix() != "mcp__notes__" {
		t.Errorf("prefixes %q, %q", got.Servers[0].ToolPrefix(), got.Servers[1].ToolPrefix())
	}
}

func TestParseConfigDefaults(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "g.yaml")
	got, err := gateway.ParseFile(file, []byte("policy: /etc/warden/policy.yaml\n"), cfgGetenv)
	if err != nil {
		t.Fatal(err)
	}
	want := &gateway.File{
		File: file, Policy: "/etc/warden/policy.yaml", Store: "sqlite://" + filepath.Join(dir, "warden.db"),
		Path: gateway.DefaultPath, UIPath: gateway.DefaultUIPath, Stdio: gateway.Client{Principal: "stdio"},
		ApprovalWait: gateway.DefaultApprovalWait, ApprovalExpiry: gateway.DefaultApprovalExpiry,
		MaxRequestBytes: gateway.DefaultMaxRequestBytes, CallTimeout: gateway.DefaultCallTimeout, CancelGrace: gateway.DefaultCancelGrace, SessionIdle: gateway.DefaultSessionIdle,
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("defaults (-want +got):\n%s", diff)
	}
	// A size given as a plain number of bytes, a DSN that is not a relative path.
	got, err = gateway.ParseFile(file, []byte("policy: p.yaml\nstore: postgres://db/warden\nlimits:\n  max_request_bytes: 65536\n"), cfgGetenv)
	if err != nil || got.MaxRequestBytes != 65536 || got.Store != "postgres://db/warden" {
		t.Errorf("got %+v, %v", got, err)
	}
}

// The servers of a trusted project file are added whatever the order of the keys.
func TestParseConfigProjectFile(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, ".mcp.json"), []byte(`{"mcpServers": {"proj": {"command": "proj-server"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "g.yaml")
	servers := "servers:\n  own:\n    command: own-server\n"
	project := "project_file:\n  path: .mcp.json\n  trust: true\n"
	for _, order := range []string{servers + project, project + servers} {
		got, err := gateway.ParseFile(file, []byte("policy: p.yaml\n"+order), cfgGetenv)
		if err != nil {
			t.Fatalf("ParseConfig:\n%s\n%v", order, err)
		}
		var names []string
		for _, s := range got.Servers {
			names = append(names, s.Name)
		}
		if strings.Join(names, ",") != "own,proj" || !got.TrustProjectFile || got.ProjectFile != filepath.Join(dir, ".mcp.json") {
			t.Errorf("config:\n%s\nservers %q, project file %q trusted=%t", order, names, got.ProjectFile, got.TrustProjectFile)
		}
	}
	// A name in both is an error.
	_, err := gateway.ParseFile(file, []byte("policy: p.yaml\nservers:\n  proj:\n    command: x\n"+project), cfgGetenv)
	wantConfigError(t, err, file, 1, `server "proj" is defined twice`)
	// An untrusted file is refused, located at project_file.
	_, err = gateway.ParseFile(file, []byte("policy: p.yaml\nproject_file:\n  path: .mcp.json\n"), cfgGetenv)
	wantConfigError(t, err, file, 3, "not trusted")
}

func TestLoadConfigMissingFile(t *testing.T) {
	path := filepath.Join(t.TempDir(), "nope.yaml")
	_, err := gateway.LoadFile(path)
	var ce *warden.ConfigError
	if !errors.As(err, &ce) || ce.File != path || !strings.Contains(ce.Msg, "cannot read gateway config") {
		t.Errorf("LoadConfig of a missing file: %v", err)
	}
}

// wantConfigError checks that err holds a *warden.ConfigError in file at line whose
// message contains msg, rendered as "file:line:col: ...".
func wantConfigError(t *testing.T, err error, file string, line int, msg string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error; want %s:%d: %s", file, line, msg)
	}
	errs := []error{err}
	if j, ok := err.(interface{ Unwrap() []error }); ok {
		errs = j.Unwrap()
	}
	for _, e := range errs {
		var ce *warden.ConfigError
		if errors.As(e, &ce) && ce.File == file && ce.Line == line && strings.Contains(ce.Msg, msg) {
			if !strings.HasPrefix(ce.Error(), fmt.Sprintf("%s:%d:", file, line)) || ce.Hint == "" {
				t.Errorf("error %q: not located as file:line, or no hint", ce.Error())
			}
			return
		}
	}
	t.Errorf("errors:\n%v\nwant one at %s:%d containing %q", err, file, line, msg)
}

func TestParseConfigErrors(t *testing.T) {
	const listen = "listen: 127.0.0.1:8080\n"
	const reader = "clients:\n  - principal: reader-agent\n    token_env: READER_TOKEN\n"
	cases := []struct {
		name string
		yaml string
		line int
		msg  string
	}{
		{"unknown key", "policy: p.yaml\npolicyy: x\n", 2, `unknown key "policyy"`},
		{"unknown nested key", "policy: p.yaml\nlimits:\n  call_timout: 5s\n", 3, `unknown key "call_timout" in limits`},
		{"unknown server key", "policy: p.yaml\nservers:\n  s:\n    command: x\n    cmd: y\n", 5, `unknown key "cmd" in servers.s`},
		{"not a mapping", "- policy\n", 1, "the top level must be a mapping"},
		{"invalid YAML", "policy: p.yaml\nlimits: [\n", 2, "invalid YAML"},
		{"empty", "", 1, "gateway config is empty"},
		{"missing policy", "store: sqlite://x.db\n", 1, "policy is required"},
		{"empty policy", "policy: ''\n", 1, "policy is empty"},
		{"policy not a string", "policy: [a]\n", 1, "policy must be a string, got a list"},
		{"shadow_policy not a string", "policy: p.yaml\nshadow_policy: {a: b}\n", 2, "shadow_policy must be a string, got a mapping"},
		{"empty shadow_policy", "policy: p.yaml\nshadow_policy: ''\n", 2, "shadow_policy is empty"},
		{"listen a number", "policy: p.yaml\nlisten: 8080\n", 2, "listen must be a string, got a number"},
		{"listen not host:port", "policy: p.yaml\nlisten: localhost\n" + reader, 2, `listen "localhost" is not host:port`},
		{"path not a URL path", "policy: p.yaml\npath: mcp\n", 2, `path "mcp" is not a URL path`},
		{"bool as string", "policy: p.yaml\ntransport:\n  allow_commands: yes\n", 3, "transport.allow_commands must be true or false, got a string"},
		{"commands not a list", "policy: p.yaml\ntransport:\n  commands: node\n", 3, "transport.commands must be a list of strings"},
		{"command with a path in the allowlist", "policy: p.yaml\ntransport:\n  commands: [/usr/bin/node]\n", 3, "transport: commands[0]"},
		{"connections zero", "policy: p.yaml\ntransport:\n  max_connections_per_server: 0\n", 3, "transport.max_connections_per_server: 0 is out of range"},
		{"connections a string", "policy: p.yaml\ntransport:\n  max_connections_per_server: many\n", 3, "max_connections_per_server must be a whole number, got a string"},
		{"servers a list", "policy: p.yaml\nservers: [a]\n", 2, "servers must be a mapping, got a list"},
		{"server both command and url", "policy: p.yaml\nservers:\n  both:\n    command: x\n    url: https://h/mcp\n", 3, `server "both": give either command or url, not both`},
		{"server neither", "policy: p.yaml\nservers:\n  none:\n    args: [a]\n", 3, `server "none": give a command or a url`},
		{"bad server name", "policy: p.yaml\nservers:\n  bad name:\n    command: x\n", 3, `server name "bad name"`},
		{"args not a list", "policy: p.yaml\nservers:\n  s:\n    command: x\n    args: -v\n", 5, "servers.s.args must be a list of strings"},
		{"headers on a command server", "policy: p.yaml\nservers:\n  s:\n    command: x\n    headers: {A: b}\n", 3, "headers apply only to a url server"},
		{"header variable missing", "policy: p.yaml\nservers:\n  r:\n    url: https://h/mcp\n    headers:\n      Authorization: \"Bearer ${MISSING_VAR}\"\n", 6, "servers.r.headers.Authorization names ${MISSING_VAR}, which is not set"},
		{"oauth without resource", "policy: p.yaml\n" + listen + "oauth:\n  issuers: [{issuer: https://idp.test, clients: [{value: u, role: r}]}]\n", 4, "oauth.resource is required"},
		{"oauth resource relative", "policy: p.yaml\n" + listen + "oauth:\n  resource: /mcp\n  issuers: [{issuer: https://idp.test, clients: [{value: u}]}]\n", 4, `oauth.resource "/mcp" is not an absolute http(s) URL`},
		{"oauth without issuers", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n", 4, "oauth.issuers: at least one issuer is required"},
		{"oauth issuer without mapping", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n  issuers:\n    - issuer: https://idp.test\n", 6, "oauth.issuers[0].clients: at least one mapping is required"},
		{"oauth HMAC algorithm", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n  issuers:\n    - issuer: https://idp.test\n      algorithms: [RS256, HS256]\n      clients: [{value: u}]\n", 7, `algorithm "HS256" is not allowed`},
		{"oauth alg none", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n  issuers:\n    - issuer: https://idp.test\n      algorithms: [none]\n      clients: [{value: u}]\n", 7, `algorithm "none" is not allowed`},
		{"oauth mapping without value", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n  issuers:\n    - issuer: https://idp.test\n      clients: [{claim: groups, role: r}]\n", 7, "oauth.issuers[0].clients[0].value is required"},
		{"oauth skew too large", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n  clock_skew: 1h\n  issuers: [{issuer: https://idp.test, clients: [{value: u}]}]\n", 5, "oauth.clock_skew 1h0m0s is too large"},
		{"oauth issuer twice", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n  issuers: [{issuer: https://idp.test, clients: [{value: u}]}, {issuer: https://idp.test, clients: [{value: v}]}]\n", 5, `issuer "https://idp.test" is listed twice`},
		{"oauth without listen", "policy: p.yaml\noauth:\n  resource: https://gw.test/mcp\n  issuers: [{issuer: https://idp.test, clients: [{value: u}]}]\n", 1, "clients and oauth are for HTTP clients, but no listen address is set"},
		{"clients without listen", "policy: p.yaml\n" + reader, 1, "clients and oauth are for HTTP clients, but no listen address is set"},
		{"listen without clients", "policy: p.yaml\n" + listen, 1, "listen is set but no clients are configured"},
		{"clients not a list", "policy: p.yaml\n" + listen + "clients: {a: b}\n", 3, "clients must be a list, not a mapping"},
		{"client without principal", "policy: p.yaml\n" + listen + "clients:\n  - token_env: READER_TOKEN\n", 4, "clients[0]: principal is required"},
		{"client without token", "policy: p.yaml\n" + listen + "clients:\n  - principal: a\n", 4, "clients[0]: a token is required"},
		{"client with two tokens", "policy: p.yaml\n" + listen + "clients:\n  - principal: a\n    token_env: READER_TOKEN\n    token_sha256: " + inbox.HashToken("x") + "\n", 6, "clients[0]: two tokens"},
		{"token_env unset", "policy: p.yaml\n" + listen + "clients:\n  - principal: a\n    token_env: UNSET_TOKEN\n", 5, "clients[0].token_env names UNSET_TOKEN, which is not set"},
		{"token_env too short", "policy: p.yaml\n" + listen + "clients:\n  - principal: a\n    token_env: SHORT_TOKEN\n", 5, "the token in SHORT_TOKEN is too short (5 characters)"},
		{"token_env a number", "policy: p.yaml\n" + listen + "clients:\n  - principal: a\n    token_env: 12\n", 5, "clients[0].token_env must be a string, got a number"},
		{"token_sha256 malformed", "policy: p.yaml\n" + listen + "clients:\n  - principal: a\n    token_sha256: sha256:ABC\n", 5, "clients[0].token_sha256 is not a token hash"},
		{"client tenant with a slash", "policy: p.yaml\n" + listen + "clients:\n  - principal: c\n    tenant: a/b\n    token_env: READER_TOKEN\n", 5, `clients[0].tenant "a/b" contains "/"`},
		{"stdio tenant with a slash", "policy: p.yaml\nstdio:\n  principal: me\n  tenant: /\n", 4, `stdio.tenant "/" contains "/"`},
		{"oauth tenant with a slash", "policy: p.yaml\n" + listen + "oauth:\n  resource: https://gw.test/mcp\n  issuers:\n    - issuer: https://idp.test\n      clients:\n        - value: u\n          tenant: acme/eu\n", 9, `oauth.issuers[0].clients[0].tenant "acme/eu" contains "/"`},
		{"stdio with a token", "policy: p.yaml\nstdio:\n  principal: me\n  token_env: READER_TOKEN\n", 4, "stdio.token_env: stdio takes no token"},
		{"duplicate client token", "policy: p.yaml\n" + listen + reader + "  - principal: b\n    token_env: SAME_TOKEN\n", 6, "client b uses the same token as client reader-agent"},
		{"client and operator share a token", "policy: p.yaml\n" + listen + reader + "operators:\n  - name: ops\n    token_env: SAME_TOKEN\n", 7, "operator ops uses the same token as client reader-agent"},
		{"operator token as hash of a client token", "policy: p.yaml\n" + listen + reader + "operators:\n  - name: ops\n    token_sha256: " + inbox.HashToken("reader-token-0123456789") + "\n", 7, "operator ops uses the same token as client reader-agent"},
		{"operator without name", "policy: p.yaml\noperators:\n  - token_env: OPS_TOKEN\n", 3, "operators[0]: name is required"},
		{"operator without token", "policy: p.yaml\noperators:\n  - name: ops\n", 3, "operators[0]: a token is required"},
		{"operator twice", "policy: p.yaml\noperators:\n  - name: ops\n    token_env: OPS_TOKEN\n  - name: ops\n    token_sha256: " + inbox.HashToken("x") + "\n", 5, `operators[1]: operator "ops" is listed twice`},
		{"ui path", "policy: p.yaml\nui:\n  path: /inbox\n", 3, `ui.path "/inbox" must start and end with /`},
		{"bad duration", "policy: p.yaml\napprovals:\n  wait: 30 seconds\n", 3, `approvals.wait "30 seconds" is not a positive duration`},
		{"negative duration", "policy: p.yaml\napprovals:\n  expires: -1h\n", 3, `approvals.expires "-1h" is not a positive duration`},
		{"zero duration", "policy: p.yaml\nlimits:\n  call_timeout: 0s\n", 3, `limits.call_timeout "0s" is not a positive duration`},
		{"negative cancel grace", "policy: p.yaml\nlimits:\n  cancel_grace: -1s\n", 3, `limits.cancel_grace "-1s" is not a positive duration`},
		{"duration a number", "policy: p.yaml\nlimits:\n  session_idle: 30\n", 3, "limits.session_idle must be a string, got a number"},
		{"elicitation value", "policy: p.yaml\napprovals:\n  elicitation: maybe\n", 3, `approvals.elicitation "maybe" must be allow or never`},
		{"self_approve not a boolean", "policy: p.yaml\nstdio:\n  self_approve: sure\n", 3, "stdio.self_approve must be true or false"},
		{"self_approve misspelt", "policy: p.yaml\nstdio:\n  self_approved: true\n", 3, `unknown key "self_approved"`},
		{"elicitation a boolean", "policy: p.yaml\napprovals:\n  elicitation: false\n", 3, "approvals.elicitation must be a string, got a boolean"},
		{"bad size", "policy: p.yaml\nlimits:\n  max_request_bytes: 4XB\n", 3, `limits.max_request_bytes "4XB" is not a size`},
		{"fractional size", "policy: p.yaml\nlimits:\n  max_request_bytes: 1.5MiB\n", 3, `limits.max_request_bytes "1.5MiB" is not a size`},
		{"size too small", "policy: p.yaml\nlimits:\n  max_request_bytes: 100\n", 3, "limits.max_request_bytes: 100 is out of range"},
		{"quoted size too small", "policy: p.yaml\nlimits:\n  max_request_bytes: \"100\"\n", 3, "limits.max_request_bytes: 100 is out of range"},
		{"redact not a boolean", "policy: p.yaml\naudit:\n  redact_args: 1\n", 3, "audit.redact_args must be true or false, got a number"},
		{"project file without path", "policy: p.yaml\nproject_file:\n  trust: true\n", 3, "project_file.path is required"},
		{"duplicate key", "policy: p.yaml\npolicy: q.yaml\n", 2, `duplicate key "policy"`},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			file := filepath.Join(t.TempDir(), "gateway.yaml")
			_, err := gateway.ParseFile(file, []byte(c.yaml), cfgGetenv)
			wantConfigError(t, err, file, c.line, c.msg)
		})
	}
}

// Every problem is reported, not only the first.
func TestParseConfigReportsEveryProblem(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	_, err := gateway.ParseFile(file, []byte("policy: p.yaml\napprovals:\n  wait: soon\nlimits:\n  call_timeout: later\n"), cfgGetenv)
	wantConfigError(t, err, file, 3, "approvals.wait")
	wantConfigError(t, err, file, 5, "limits.call_timeout")
}

func TestParseConfigTooLarge(t *testing.T) {
	file := filepath.Join(t.TempDir(), "gateway.yaml")
	_, err := gateway.ParseFile(file, []byte("policy: p.yaml\n#"+strings.Repeat("x", 1<<20)+"\n"), cfgGetenv)
	var ce *warden.ConfigError
	if !errors.As(err, &ce) || ce.File != file || !strings.Contains(ce.Msg, "over the 1 MiB limit") {
		t.Errorf("oversized config: %v", err)
	}
}

// For the stdio front alone, an HTTP client's or operator's token variable may be
// unset (that identity gets no token); one that is set is still checked, and so is
// every other key.
func TestParseConfigStdioOnly(t *testing.T) {
	file := filepath.Join(t.TempDir(), "g.yaml")
	unset := "policy: p.yaml\nlisten: 127.0.0.1:0\nclients:\n  - principal: web\n    role: agent\n    token_env: UNSET_TOKEN\n" +
		"  - principal: reader\n    role: reader\n    token_env: READER_TOKEN\noperators:\n  - name: op\n    token_env: UNSET_OPS_TOKEN\n"
	if _, err := gateway.ParseFile(file, []byte(unset), cfgGetenv); err == nil || !strings.Contains(err.Error(), "UNSET_TOKEN, which is not set") {
		t.Errorf("ParseFile with an unset token_env: %v, want the not-set error", err)
	}
	got, err := gateway.ParseFileStdio(file, []byte(unset), cfgGetenv)
	if err != nil {
		t.Fatalf("ParseFileStdio with unset token_env: %v", err)
	}
	if len(got.Clients) != 2 || got.Clients[0].TokenHash != "" || got.Clients[1].TokenHash != inbox.HashToken("reader-token-0123456789") {
		t.Errorf("clients %+v, want web without a token and reader with READER_TOKEN's hash", got.Clients)
	}
	if len(got.Operators) != 1 || got.Operators[0].TokenHash != "" {
		t.Errorf("operators %+v, want op without a token", got.Operators)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"policy: p.yaml\nclients:\n  - principal: web\n    role: agent\n    token_env: SHORT_TOKEN\n", "too short"},
		{"policy: p.yaml\nclients:\n  - principal: web\n    role: agent\n", "a token is required"},
		{"policy: p.yaml\nclients:\n  - principal: a\n    token_env: READER_TOKEN\n  - principal: b\n    token_env: SAME_TOKEN\n", "same token"},
		{"policy: p.yaml\nlisten: 127.0.0.1:0\nclinets: []\n", "clinets"},
	} {
		if _, err := gateway.ParseFileStdio(file, []byte(bad.yaml), cfgGetenv); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("ParseFileStdio(%q): %v, want an error with %q", bad.yaml, err, bad.want)
		}
	}
}

// An oauth section alone serves the HTTP front; audience and claim take their
// defaults.
func TestParseConfigOAuth(t *testing.T) {
	data := "policy: p.yaml\nlisten: 127.0.0.1:8080\noauth:\n  resource: https://gw.test/mcp\n  scopes_supported: [mcp]\n  issuers:\n    - issuer: https://idp.test\n      algorithms: [ES256]\n      clients:\n        - value: u1\n          principal: alice\n          role: r\n        - claim: groups\n          value: devs\n          tenant: acme\n          self_approve: true\n    - issuer: https://idp2.test\n      audience: api://warden\n      clients: [{value: x}]\n"
	cfg, err := gateway.ParseFile("/tmp/g.yaml", []byte(data), func(string) string { return "" })
	if err != nil {
		t.Fatal(err)
	}
	want := &gateway.OAuth{Resource: "https://gw.test/mcp", Scopes: []string{"mcp"}, Issuers: []gateway.OAuthIssuer{
		{Issuer: "https://idp.test", Audience: "https://gw.test/mcp", Algorithms: []string{"ES256"}, Clients: []gateway.ClaimClient{
			{Claim: "sub", Value: "u1", Client: gateway.Client{Principal: "alice", Role: "r"}},
			{Claim: "groups", Value: "devs", Client: gateway.Client{Tenant: "acme", SelfApprove: true}},
		}},
		{Issuer: "https://idp2.test", Audience: "api://warden", Clients: []gateway.ClaimClient{{Claim: "sub", Value: "x"}}},
	}}
	if !reflect.DeepEqual(cfg.OAuth, want) {
		t.Errorf("OAuth = %+v\nwant    %+v", cfg.OAuth, want)
	}
}
