// Transport admission: the fail-closed check that runs before any upstream MCP server
// process is started or any connection to one is opened (REFERENCE section 10).
//
// The messages of a denial are part of the contract (they come from the ADR and are
// matched byte for byte by tests and operators' alerting), so they are built in one
// place each, below, and never reworded casually.

package upstream

import (
	"context"
	"errors"
	"fmt"
	"net/netip"
	"net/url"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fanout"
)

// DefaultMaxConnections is the number of concurrent connections the gateway keeps
// to one upstream server when [TransportPolicy.MaxConnectionsPerServer] is 0.
const DefaultMaxConnections = 5

// defaultEnvDeny holds the default deny patterns; it is never handed out, so no
// caller can weaken the default for everyone else.
var defaultEnvDeny = [...]string{
	"API_KEY", "API_SECRET", "API_TOKEN", "ACCESS_TOKEN", "AUTH_TOKEN",
	"AWS_SECRET", "AWS_SESSION_TOKEN", "CREDENTIAL", "DATABASE_URL", "DB_PASSWORD",
	"PASSWORD", "PRIVATE_KEY", "REFRESH_TOKEN", "SECRET_KEY", "SERVICE_TOKEN",
	// Warden's additions to the ADR's list.
	"TOKEN", "SECRET",
}

// DefaultEnvDenyPatterns returns a fresh copy of the default environment deny
// patterns (REFERENCE section 10), in the documented order. It is a function rather
// than a variable so that no package can change the default for every other one;
// to extend the defaults, append to the returned slice and set
// [TransportPolicy.EnvDeny].
func DefaultEnvDenyPatterns() []string { return slices.Clone(defaultEnvDeny[:]) }

// TransportPolicy decides which upstream MCP servers may be started or connected to.
//
// The zero value is the secure default: commands denied, URLs denied, no allowlists,
// env filtering on with [DefaultEnvDenyPatterns], [DefaultMaxConnections] connections
// per server. Every field that loosens the policy must be set explicitly.
//
// Transport admission is a separate question from tool permission: admitting a
// server never allows any of its tools, and allowing a tool never admits a server.
//
// A TransportPolicy is only read by its methods, so it is safe for concurrent use as
// long as nobody modifies it meanwhile.
type TransportPolicy struct {
	// AllowCommands permits servers started as child processes (stdio transport).
	AllowCommands bool
	// Commands is the allowlist of bare command names (matched exactly, case
	// sensitively). Empty means any bare name, when AllowCommands is set. A command
	// given as a path (containing '/' or '\') is always refused: name the program
	// and let PATH find it.
	Commands []string

	// AllowURLs permits servers reached over the network (streamable HTTP).
	AllowURLs bool
	// Hosts is the allowlist of hostnames, compared lower-cased and exactly (no
	// wildcard, no suffix match, no port). Empty means any host, when AllowURLs is
	// set. The allowlist applies to loopback hosts too.
	Hosts []string
	// AllowInsecureLoopback permits plain http (and ws) URLs, and only to a loopback
	// host: 127.0.0.0/8, ::1 or the name "localhost". It exists for local
	// development and tests; without it every URL must use https or wss.
	AllowInsecureLoopback bool

	// KeepSecretEnv turns environment filtering off: a child process then gets its
	// whole environment, secrets included. The zero value filters.
	KeepSecretEnv bool
	// EnvDeny lists the deny patterns: a key is dropped from a child's environment
	// when any pattern, upper-cased, is a substring of the upper-cased key. Nil or
	// empty means [DefaultEnvDenyPatterns]; a non-empty list replaces the defaults.
	// To pass every variable, set KeepSecretEnv instead.
	EnvDeny []string

	// MaxConnectionsPerServer bounds the concurrent connections to one server. Zero
	// means [DefaultMaxConnections]; a negative value is invalid.
	MaxConnectionsPerServer int
}

// DeniedError is the error of a refused transport. Its Message is one of the
// documented denial messages, exact, and is what Error returns.
type DeniedError struct {
	// Server is the server's name; empty when the check ran without a server
	// (CheckCommand, CheckURL).
	Server string
	// Transport is "command" or "url".
	Transport string
	// Target is what was refused: the command, or the URL with any user info, query
	// and fragment removed, so it is safe to log.
	Target string
	// Message is the denial message.
	Message string
}

// Error returns e.Message exactly.
func (e *DeniedError) Error() string { return e.Message }

// Validate reports every invalid setting of p at once (joined with errors.Join): a
// negative connection limit, an allowlist entry that is empty or is not a bare name
// (a command with a path separator or spaces; a host with a scheme, port, path or
// user info), an empty deny pattern. A nil error means the policy can be used as is.
func (p *TransportPolicy) Validate() error {
	var errs []error
	if p.MaxConnectionsPerServer < 0 {
		errs = append(errs, fmt.Errorf("max connections per server must be 0 (default %d) or more, got %d", DefaultMaxConnections, p.MaxConnectionsPerServer))
	}
	for i, c := range p.Commands {
		if err := checkBareCommand(c); err != nil {
			errs = append(errs, fmt.Errorf("commands[%d] %q: %w", i, c, err))
		}
	}
	for i, h := range p.Hosts {
		if err := checkHostEntry(h); err != nil {
			errs = append(errs, fmt.Errorf("hosts[%d] %q: %w", i, h, err))
		}
	}
	for i, d := range p.EnvDeny {
		if strings.TrimSpace(d) == "" || strings.ContainsAny(d, "=\x00") {
			errs = append(errs, fmt.Errorf("env_deny[%d] %q: a pattern must be non-empty and hold no '=' or NUL (to keep every variable, set keep_secret_env)", i, d))
		}
	}
	return errors.Join(errs...)
}

// checkBareCommand reports why c cannot be a bare command name, or nil.
func checkBareCommand(c string) error {
	switch {
	case c == "":
		return errors.New("empty command name")
	case c == "." || c == "..":
		return errors.New("not a command name")
	case strings.ContainsAny(c, `/\`):
		return errors.New(`a bare command name holds no '/' or '\'`)
	case strings.ContainsRune(c, 0):
		return errors.New("command name holds a NUL byte")
	case strings.TrimSpace(c) != c:
		return errors.New("command name has leading or trailing white space")
	}
	return nil
}

// checkHostEntry reports why h cannot be a host allowlist entry, or nil.
func checkHostEntry(h string) error {
	switch {
	case h == "":
		return errors.New("empty host")
	case strings.ContainsAny(h, " \t\r\n\x00"):
		return errors.New("a host holds no white space or NUL")
	case strings.Contains(h, "://"):
		return errors.New("give the hostname only, without a scheme")
	case strings.ContainsAny(h, `/\?#@`):
		return errors.New("give the hostname only, without path, query or user info")
	case strings.HasPrefix(h, "["):
		return errors.New("give an IPv6 address without brackets, e.g. ::1")
	case strings.Contains(h, ":"):
		if _, err := netip.ParseAddr(h); err != nil {
			return errors.New("give the hostname only, without a port")
		}
	}
	return nil
}

// MaxConns returns the bound on concurrent connections to one server:
// MaxConnectionsPerServer, or DefaultMaxConnections when it is 0. For an invalid
// negative setting (which Validate and Admit refuse) it returns 1, the strictest
// bound that still works.
func (p *TransportPolicy) MaxConns() int {
	switch n := p.MaxConnectionsPerServer; {
	case n == 0:
		return DefaultMaxConnections
	case n < 0:
		return 1
	default:
		return n
	}
}

// CheckCommand decides whether cmd may be started as an upstream server. It returns
// nil or a *DeniedError whose Message is, in this order of checks:
//
//   - commands disabled: MCP command transport is disabled (allow_commands=false). Blocked command: '<cmd>'
//   - cmd empty, "." or "..", with leading or trailing white space, or holding NUL:
//     MCP command is not a valid command name (<why>): "<cmd, Go-quoted>"
//   - cmd holds '/' or '\' and its last element is allowed:
//     Command contains path separator: '<cmd>'. Use bare command name '<bare>' instead.
//   - cmd (or, for a path, its last element) not in the allowlist:
//     Command '<cmd>' not in allowlist. Allowed: ['a', 'b']
//
// The allowlist is rendered the way Python prints a list of strings (the ADR's
// reference implementation): entries in configured order, single-quoted, separated
// by ", ". A command given as a path is refused even when its last element is
// allowed, so PATH lookup, not the configuration file, decides which binary runs.
func (p *TransportPolicy) CheckCommand(cmd string) error {
	deny := func(msg string) error {
		return &DeniedError{Transport: "command", Target: cmd, Message: msg}
	}
	if !p.AllowCommands { // fail closed: the zero policy starts nothing
		return deny(fmt.Sprintf("MCP command transport is disabled (allow_commands=false). Blocked command: '%s'", cmd))
	}
	if strings.ContainsAny(cmd, `/\`) {
		bare := cmd[strings.LastIndexAny(cmd, `/\`)+1:]
		if checkBareCommand(bare) == nil && p.commandAllowed(bare) {
			return deny(fmt.Sprintf("Command contains path separator: '%s'. Use bare command name '%s' instead.", cmd, bare))
		}
		if len(p.Commands) > 0 {
			return deny(fmt.Sprintf("Command '%s' not in allowlist. Allowed: %s", cmd, pyList(p.Commands)))
		}
		return deny(fmt.Sprintf("MCP command is not a valid command name (path without a program name): %q", cmd))
	}
	if err := checkBareCommand(cmd); err != nil {
		return deny(fmt.Sprintf("MCP command is not a valid command name (%v): %q", err, cmd))
	}
	if !p.commandAllowed(cmd) {
		return deny(fmt.Sprintf("Command '%s' not in allowlist. Allowed: %s", cmd, pyList(p.Commands)))
	}
	return nil
}

// commandAllowed reports whether the bare name is allowed by the allowlist.
func (p *TransportPolicy) commandAllowed(bare string) bool {
	return len(p.Commands) == 0 || slices.Contains(p.Commands, bare)
}

// CheckURL decides whether the server at raw may be connected to. It returns nil or
// a *DeniedError whose Message is, in this order of checks (<url> is the URL with any
// user info, query and fragment removed):
//
//   - URLs disabled: MCP URL transport is disabled (allow_urls=false). Blocked URL: '<url>'
//   - raw does not parse, has surrounding white space, or is not absolute:
//     MCP URL is not a valid absolute URL (<why>): "<raw up to any '?' or '#', Go-quoted>"
//   - user info present (credentials, or the "https://good.com@evil.com" trick):
//     MCP URL must not contain user info before '@'; it would connect to host '<host>'. Put credentials in headers: '<url>'
//   - no host: MCP URL has no host: '<url>'
//   - scheme not https or wss, and not the loopback exception:
//     MCP URL transport requires https or wss scheme. Got '<scheme>' in URL: '<url>'
//   - http or ws with AllowInsecureLoopback to a host that is not loopback:
//     MCP URL transport allows plain '<scheme>' only to a loopback host (127.0.0.0/8, ::1, localhost). Got host '<host>' in URL: '<url>'
//   - host not in the allowlist: Host '<host>' not in allowlist. Allowed: ['a', 'b']
//
// The host compared is the URL's hostname, lower-cased, without port or brackets:
// the name the HTTP client resolves. Loopback means an IP address in 127.0.0.0/8
// (also written IPv4-mapped, ::ffff:127.0.0.1), ::1 without a zone, or exactly
// "localhost"; names that merely resolve to loopback are not trusted as such.
func (p *TransportPolicy) CheckURL(raw string) error {
	shown := redactRawURL(raw)
	u, perr := url.Parse(raw)
	if perr == nil {
		shown = redactURL(u)
	}
	deny := func(msg string) error {
		return &DeniedError{Transport: "url", Target: shown, Message: msg}
	}
	if !p.AllowURLs { // fail closed: the zero policy connects nowhere
		return deny(fmt.Sprintf("MCP URL transport is disabled (allow_urls=false). Blocked URL: '%s'", shown))
	}
	invalid := func(why string) error {
		return deny(fmt.Sprintf("MCP URL is not a valid absolute URL (%s): %q", why, redactRawURL(raw)))
	}
	switch {
	case strings.TrimSpace(raw) != raw:
		return invalid("leading or trailing white space")
	case perr != nil:
		var ue *url.Error
		if errors.As(perr, &ue) {
			return invalid(ue.Err.Error())
		}
		return invalid(perr.Error())
	case u.Scheme == "" || u.Opaque != "":
		return invalid("want scheme://host/path")
	case u.User != nil:
		return deny(fmt.Sprintf("MCP URL must not contain user info before '@'; it would connect to host '%s'. Put credentials in headers: '%s'", u.Hostname(), shown))
	}
	host := strings.ToLower(u.Hostname())
	if host == "" {
		return deny(fmt.Sprintf("MCP URL has no host: '%s'", shown))
	}
	switch u.Scheme {
	case "https", "wss":
	case "http", "ws":
		if !p.AllowInsecureLoopback {
			return deny(schemeMessage(u.Scheme, shown))
		}
		if !isLoopbackHost(host) {
			return deny(fmt.Sprintf("MCP URL transport allows plain '%s' only to a loopback host (127.0.0.0/8, ::1, localhost). Got host '%s' in URL: '%s'", u.Scheme, host, shown))
		}
	default:
		return deny(schemeMessage(u.Scheme, shown))
	}
	if len(p.Hosts) > 0 && !slices.ContainsFunc(p.Hosts, func(h string) bool { return strings.ToLower(h) == host }) {
		return deny(fmt.Sprintf("Host '%s' not in allowlist. Allowed: %s", host, pyList(p.Hosts)))
	}
	return nil
}

func schemeMessage(scheme, shown string) string {
	return fmt.Sprintf("MCP URL transport requires https or wss scheme. Got '%s' in URL: '%s'", scheme, shown)
}

// isLoopbackHost reports whether the lower-cased hostname names the loopback
// interface by itself, without a DNS lookup.
func isLoopbackHost(host string) bool {
	if host == "localhost" {
		return true
	}
	a, err := netip.ParseAddr(host)
	if err != nil || a.Zone() != "" {
		return false
	}
	return a.Unmap().IsLoopback()
}

// redactURL renders u without user info, query and fragment.
func redactURL(u *url.URL) string {
	c := *u
	c.User = nil
	c.RawQuery = ""
	c.ForceQuery = false
	c.Fragment = ""
	c.RawFragment = ""
	return c.String()
}

// redactRawURL cuts an unparsed URL at its query or fragment, and drops what could be
// user info in its authority, for display.
func redactRawURL(raw string) string {
	if i := strings.IndexAny(raw, "?#"); i >= 0 {
		raw = raw[:i]
	}
	if i := strings.Index(raw, "://"); i >= 0 {
		start := i + len("://")
		end := len(raw)
		if j := strings.IndexAny(raw[start:], `/\`); j >= 0 {
			end = start + j
		}
		if at := strings.LastIndexByte(raw[start:end], '@'); at >= 0 {
			raw = raw[:start] + raw[start+at+1:]
		}
	}
	return raw
}

// pyList renders a list of strings the way Python's repr does: ['a', 'b'].
func pyList(items []string) string {
	var b strings.Builder
	b.WriteByte('[')
	for i, s := range items {
		if i > 0 {
			b.WriteString(", ")
		}
		b.WriteString(pyRepr(s))
	}
	b.WriteByte(']')
	return b.String()
}

// pyRepr quotes s the way Python's repr quotes a str: single quotes unless s holds a
// single quote and no double quote, backslash escapes for the quote, backslash and
// control characters.
func pyRepr(s string) string {
	q := byte('\'')
	if strings.ContainsRune(s, '\'') && !strings.ContainsRune(s, '"') {
		q = '"'
	}
	var b strings.Builder
	b.WriteByte(q)
	for _, r := range s {
		switch {
		case r == rune(q) || r == '\\':
			b.WriteByte('\\')
			b.WriteRune(r)
		case r == '\n':
			b.WriteString(`\n`)
		case r == '\r':
			b.WriteString(`\r`)
		case r == '\t':
			b.WriteString(`\t`)
		case r < 0x20 || r == 0x7f:
			fmt.Fprintf(&b, `\x%02x`, r)
		default:
			b.WriteRune(r)
		}
	}
	b.WriteByte(q)
	return b.String()
}

// Admit decides whether the server s may be started or connected to, before anything
// happens: it starts no process and opens no connection, whatever it returns.
//
// It returns, in this order:
//   - an error wrapping the problem when p is invalid (see Validate) or s is
//     (see [ServerConfig.Validate]); no event is emitted for a configuration error;
//   - the *DeniedError of CheckCommand or CheckURL, by s.Transport(), with Server
//     set to s.Name; exactly one [warden.EventTransportDenied] event is then emitted
//     to sink (a nil sink is allowed) with Checker "transport", Target the
//     DeniedError's Target, Reason its Message, and Detail naming the server;
//   - nil when the server is admitted. Admission allows no tool.
//
// A sink that panics is recovered (a [Server] logs the panic to its Logger): it
// cannot turn the denial into an allow.
func (p *TransportPolicy) Admit(ctx context.Context, s ServerConfig, sink warden.Sink) error {
	if err := p.Validate(); err != nil {
		return fmt.Errorf("transport policy: %w", err)
	}
	if err := s.Validate(); err != nil {
		return err
	}
	var err error
	if s.Transport() == "url" {
		err = p.CheckURL(s.URL)
	} else {
		err = p.CheckCommand(s.Command)
	}
	if err == nil && !p.KeepSecretEnv {
		deny := p.EnvDeny
		if len(deny) == 0 {
			deny = defaultEnvDeny[:]
		}
		for _, name := range s.EnvRefs {
			if envDenied(name, deny) {
				target := s.Command
				if s.Transport() == "url" {
					target = redactRawURL(s.URL)
				}
				err = &DeniedError{Transport: s.Transport(), Target: target, Message: fmt.Sprintf("server %q: its project file passes ${%s}, a secret by the transport policy's env_deny patterns, into its env or headers; a project file does not get Warden's secrets (under any name): configure the server in Warden's own configuration, or set keep_secret_env", s.Name, name)}
				break
			}
		}
	}
	if err == nil {
		return nil
	}
	d, ok := err.(*DeniedError)
	if !ok { // the checks return only *DeniedError; anything else still denies
		d = &DeniedError{Transport: s.Transport(), Message: err.Error()}
	}
	d.Server = s.Name
	if sink != nil {
		emitDenied(ctx, sink, d)
	}
	return d
}

func emitDenied(ctx context.Context, sink warden.Sink, d *DeniedError) {
	fanout.Emit(ctx, nil, sink, warden.Event{
		Name:    warden.EventTransportDenied,
		Time:    time.Now(),
		Checker: "transport",
		Target:  d.Target,
		Reason:  d.Message,
		Detail:  fmt.Sprintf("server %q (%s transport) not admitted: %s", d.Server, d.Transport, d.Message),
	})
}

// ChildEnv returns the whole environment for a server's child process, as KEY=VALUE
// entries sorted by key: base (typically os.Environ()) overlaid with extra (extra
// wins; within base the last entry for a key wins), then filtered.
//
// Filtering (unless KeepSecretEnv) drops every key for which some deny pattern (see
// EnvDeny), upper-cased, is a substring of the upper-cased key; this applies to
// inherited and configured variables alike, so a secret named in a server's env is
// dropped too. Entries that cannot be passed to a process are always dropped: a base
// entry without '=' or with an empty key, a key holding '=' or NUL, a value holding
// NUL.
//
// The result is never nil, so assigning it to exec.Cmd.Env never means "inherit the
// parent's environment". base and extra are not modified.
func (p *TransportPolicy) ChildEnv(base []string, extra map[string]string) []string {
	vars := make(map[string]string, len(base)+len(extra))
	for _, kv := range base {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			continue // malformed: no '='
		}
		vars[k] = v
	}
	for k, v := range extra {
		vars[k] = v
	}
	deny := p.EnvDeny
	if len(deny) == 0 {
		deny = defaultEnvDeny[:]
	}
	keys := make([]string, 0, len(vars))
	for k, v := range vars {
		if k == "" || strings.ContainsAny(k, "=\x00") || strings.ContainsRune(v, 0) {
			continue
		}
		if !p.KeepSecretEnv && envDenied(k, deny) {
			continue
		}
		keys = append(keys, k)
	}
	slices.Sort(keys)
	env := make([]string, 0, len(keys))
	for _, k := range keys {
		env = append(env, k+"="+vars[k])
	}
	return env
}

// envDenied reports whether any pattern, upper-cased, occurs in the upper-cased key.
func envDenied(key string, patterns []string) bool {
	k := strings.ToUpper(key)
	for _, pat := range patterns {
		if strings.Contains(k, strings.ToUpper(pat)) {
			return true
		}
	}
	return false
}
