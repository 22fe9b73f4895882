package gateway

import (
	"fmt"
	"net"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/inbox"
	"github.com/wardenhq/warden/internal/yamlstrict"
	"github.com/wardenhq/warden/upstream"
)

// File is a gateway configuration file, decoded and checked. Paths in it are
// absolute (resolved against the file's directory).
type File struct {
	// File is the configuration file's path.
	File string
	// Policy is the policy file every call is checked against.
	Policy string
	// ShadowPolicy, when set, is a candidate policy file evaluated whole beside
	// Policy on every check, as a shadow: where it is stricter its verdict is recorded
	// (the warden.shadow event, the call's audit record), and it never changes a call.
	ShadowPolicy string
	// Store is the store DSN (sqlite://..., postgres://...).
	Store string
	// Transport decides which servers may start or be connected to.
	Transport upstream.TransportPolicy
	// Servers are the upstream servers, sorted by name. Servers from a trusted
	// project file come after those named in the file (a name in both is an error).
	Servers []upstream.ServerConfig
	// ProjectFile, when set, names a project file of server definitions
	// (".mcp.json" format) and whether it is trusted.
	ProjectFile      string
	TrustProjectFile bool

	// Listen is the HTTP front's address ("" = no HTTP front); Path the MCP endpoint.
	Listen string
	Path   string
	// TrustedProxies are the reverse proxies in front of the HTTP front whose
	// X-Forwarded-For and X-Forwarded-Proto headers are believed (see
	// internal/clientaddr); single addresses are /32 or /128, IPv4-mapped ones IPv4.
	TrustedProxies []netip.Prefix
	// Stdio is the identity of the stdio front: principal "stdio" when none is
	// configured, and an empty role means the policy's active role.
	Stdio Client
	// Clients are the HTTP clients, by token hash.
	Clients []Client
	// OAuth, when set, lets HTTP clients present JWT access tokens of its issuers.
	OAuth *OAuth
	// Operators may log in to the web inbox (UIPath) and decide.
	Operators []inbox.Operator
	UIPath    string

	// ApprovalWait is how long a call waits for an operator; ApprovalExpiry how long a
	// pending decision can still be decided. Elicitation (approvals.elicitation:
	// allow; the default is never) lets a client's user approve that client's own
	// asks by MCP elicitation, but only for identities whose entry sets
	// [Client.SelfApprove].
	ApprovalWait   time.Duration
	ApprovalExpiry time.Duration
	Elicitation    bool

	// MaxRequestBytes bounds an HTTP request body; CallTimeout one upstream call;
	// CancelGrace is how long an upstream whose call a client cancelled gets to answer
	// a ping before its process is killed (see [upstream.Options.CancelGrace]);
	// SessionIdle closes HTTP sessions idle this long.
	MaxRequestBytes int64
	CallTimeout     time.Duration
	CancelGrace     time.Duration
	SessionIdle     time.Duration
	// RedactArgs leaves arguments out of the audit log (their digest is kept).
	RedactArgs bool
	// HeadInterval is how often the audit chain's head is published (logged, and
	// written to HeadFile and posted to HeadWebhook when set) if it changed; 0 means
	// the default, a minute. HeadFile is an absolute path; HeadWebhook an http(s) URL.
	HeadInterval time.Duration
	HeadFile     string
	HeadWebhook  string

	// MetricsListen is the address of the Prometheus metrics listener ("" = none):
	// its own, never the HTTP front's (see [Gateway.MetricsHandler]).
	MetricsListen string
	// Traces, when set, is the traces section (see [Traces]); nil when there is none.
	Traces *Traces
}

// Client is an identity the gateway serves: a principal with a role, and for HTTP
// clients the SHA-256 hash of its bearer token.
type Client struct {
	Principal string
	Tenant    string
	Role      string
	TokenHash string
	// SelfApprove (self_approve: true) lets this identity's calls that need a person
	// be approved by the client's own user, by MCP elicitation, when
	// approvals.elicitation is allow. It is a trade-off: whoever holds this
	// identity's token (or, for stdio, starts the gateway) approves their own
	// escalations, so the policy's asks stop being a second pair of eyes. Without it
	// every ask goes to an operator.
	SelfApprove bool
}

// Defaults of a gateway configuration.
const (
	DefaultApprovalWait    = 30 * time.Second
	DefaultApprovalExpiry  = 24 * time.Hour
	DefaultMaxRequestBytes = 4 << 20
	DefaultCallTimeout     = upstream.DefaultCallTimeout
	DefaultCancelGrace     = 5 * time.Second
	DefaultSessionIdle     = 30 * time.Minute
	DefaultPath            = "/mcp"
	DefaultUIPath          = "/ui/"
)

var tokenHashPattern = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// LoadFile reads and checks a gateway configuration file. Every problem is a
// located *warden.ConfigError (joined when there are several). Tokens named by
// token_env are read from the environment now; a missing or short one is an error.
func LoadFile(path string) (*File, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, &warden.ConfigError{File: path, Msg: "cannot read gateway config: " + err.Error(), Hint: "check the path (warden serve -c FILE)"}
	}
	return ParseFile(path, data, os.Getenv)
}

var configDoc = yamlstrict.Doc{
	Name:      "gateway config",
	Plural:    "gateway configs",
	EmptyHint: "start with `policy: policy.yaml` and a `servers:` mapping",
	MultiHint: "a gateway config holds one YAML document",
}

// ParseFile checks a gateway configuration's contents; file names it in errors and
// anchors relative paths; getenv reads token_env variables.
func ParseFile(file string, data []byte, getenv func(string) string) (*File, error) {
	return parseFile(file, data, getenv, false)
}

// ParseFileStdio is ParseFile for a gateway that serves only its stdio front (`warden
// serve --stdio`): a token_env of an HTTP client or operator whose variable is not
// set is no error, since no HTTP request is served; that client or operator has no
// token (TokenHash is empty) and nothing can authenticate as it. A variable that is
// set is checked as ParseFile checks it, and so is everything else.
func ParseFileStdio(file string, data []byte, getenv func(string) string) (*File, error) {
	return parseFile(file, data, getenv, true)
}

func parseFile(file string, data []byte, getenv func(string) string, stdioOnly bool) (*File, error) {
	d := &configDecoder{SectionDecoder: upstream.SectionDecoder{Decoder: yamlstrict.Decoder{File: file, StringKeys: true}, Getenv: getenv}, stdioOnly: stdioOnly}
	if len(data) > 1<<20 {
		d.Fail(nil, "split it or remove data", "gateway config is %d bytes, over the 1 MiB limit", len(data))
		return nil, d.Err()
	}
	root := d.Document(data, configDoc)
	if root == nil {
		return nil, d.Err()
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	d.Dir = filepath.Dir(abs)
	c := &File{
		File: abs, Path: DefaultPath, UIPath: DefaultUIPath,
		ApprovalWait: DefaultApprovalWait, ApprovalExpiry: DefaultApprovalExpiry,
		MaxRequestBytes: DefaultMaxRequestBytes, CallTimeout: DefaultCallTimeout, CancelGrace: DefaultCancelGrace, SessionIdle: DefaultSessionIdle,
	}
	d.top(root, c)
	if len(d.Errs) > 0 {
		return nil, d.Err()
	}
	return c, nil
}

type configDecoder struct {
	upstream.SectionDecoder
	hashes    map[string]string // token hash -> who holds it
	stdioOnly bool              // ParseFileStdio: an unset token_env is no error
	// metricsListen is the value node of metrics.listen, to locate a clash with listen.
	metricsListen *yaml.Node
}

var topKeys = []string{"policy", "shadow_policy", "store", "transport", "servers", "project_file", "listen", "path", "trusted_proxies", "stdio", "clients", "oauth", "operators", "ui", "approvals", "limits", "audit", "metrics", "traces"}

func (d *configDecoder) top(root *yaml.Node, c *File) {
	kvs, ok := d.MappingHint(root, "the top level", "a gateway config is a mapping of "+strings.Join(topKeys, ", "))
	if !ok {
		return
	}
	seen := map[string]bool{}
	var project []upstream.ServerConfig
	for _, kv := range kvs {
		seen[kv.Key] = true
		switch kv.Key {
		case "policy":
			c.Policy = d.Path(kv.Value, "policy")
		case "shadow_policy":
			c.ShadowPolicy = d.Path(kv.Value, "shadow_policy")
		case "store":
			if s, ok := d.NonEmpty(kv.Value, "store"); ok {
				c.Store = d.storeDSN(s)
			}
		case "transport":
			d.Transport(kv.Value, &c.Transport)
		case "servers":
			c.Servers = d.Servers(kv.Value)
		case "project_file":
			project = d.projectFile(kv.Value, c)
		case "listen":
			if s, ok := d.NonEmpty(kv.Value, "listen"); ok {
				if _, _, err := net.SplitHostPort(s); err != nil {
					d.Fail(kv.Value, "write host:port, e.g. 127.0.0.1:8080", "listen %q is not host:port", s)
				}
				c.Listen = s
			}
		case "path":
			if s, ok := d.NonEmpty(kv.Value, "path"); ok {
				if !strings.HasPrefix(s, "/") || strings.ContainsAny(s, " ?#") {
					d.Fail(kv.Value, "write an absolute URL path such as /mcp", "path %q is not a URL path", s)
				}
				c.Path = s
			}
		case "trusted_proxies":
			c.TrustedProxies = d.trustedProxies(kv.Value)
		case "stdio":
			c.Stdio = d.client(kv.Value, "stdio", false)
		case "clients":
			c.Clients = d.clients(kv.Value)
		case "oauth":
			c.OAuth = d.oauth(kv.Value)
		case "operators":
			c.Operators = d.operators(kv.Value)
		case "ui":
			d.ui(kv.Value, c)
		case "approvals":
			d.approvals(kv.Value, c)
		case "limits":
			d.limits(kv.Value, c)
		case "audit":
			d.audit(kv.Value, c)
		case "metrics":
			d.metrics(kv.Value, c)
		case "traces":
			c.Traces = d.traces(kv.Value)
		default:
			d.Fail(kv.KeyNode, "known keys: "+strings.Join(topKeys, ", ")+yamlstrict.Suggest(kv.Key, topKeys), "unknown key %q", kv.Key)
		}
	}
	// Added after the loop, so that a servers key after project_file cannot replace them.
	c.Servers = append(c.Servers, project...)
	if !seen["policy"] {
		d.Fail(root, "name the policy file every call is checked against, e.g. `policy: policy.yaml`", "policy is required")
	}
	if c.Store == "" {
		c.Store = "sqlite://" + filepath.Join(d.Dir, "warden.db")
	}
	if c.Listen == "" && (len(c.Clients) > 0 || c.OAuth != nil) {
		d.Fail(root, "add `listen: 127.0.0.1:8080` or remove clients and oauth", "clients and oauth are for HTTP clients, but no listen address is set")
	}
	if c.Listen == "" && len(c.TrustedProxies) > 0 {
		d.Fail(root, "add `listen: 127.0.0.1:8080` or remove trusted_proxies", "trusted_proxies is for the HTTP front, but no listen address is set")
	}
	if c.Listen != "" && len(c.Clients) == 0 && c.OAuth == nil {
		d.Fail(root, "add a client with a token (token_env or token_sha256) or an oauth section; the HTTP front refuses every request without one", "listen is set but no clients are configured")
	}
	if c.MetricsListen != "" && c.MetricsListen == c.Listen && !strings.HasSuffix(c.Listen, ":0") {
		d.Fail(d.metricsListen, "give metrics.listen another port, e.g. 127.0.0.1:9464: the metrics are served on a listener of their own", "metrics.listen %s is the address of listen", c.MetricsListen)
	}
	if c.Stdio.Principal == "" {
		c.Stdio.Principal = "stdio"
	}
	for i := range c.Servers {
		for j := i + 1; j < len(c.Servers); j++ {
			if c.Servers[i].Name == c.Servers[j].Name {
				d.Fail(root, "rename one of them", "server %q is defined twice (in servers and in the project file)", c.Servers[i].Name)
			}
		}
	}
}

func (d *configDecoder) storeDSN(s string) string {
	if rest, ok := strings.CutPrefix(s, "sqlite://"); ok && rest != "" && !filepath.IsAbs(rest) && !strings.HasPrefix(rest, ":memory:") {
		return "sqlite://" + filepath.Join(d.Dir, rest)
	}
	return s
}

func (d *configDecoder) duration(n *yaml.Node, where string) time.Duration {
	s, ok := d.NonEmpty(n, where)
	if !ok {
		return 0
	}
	v, err := time.ParseDuration(s)
	if err != nil || v <= 0 {
		d.Fail(n, "write a positive Go duration such as 30s, 5m or 24h", "%s %q is not a positive duration", where, s)
		return 0
	}
	return v
}

// size reads a byte size of at least min: a whole number of bytes, or one followed by
// KiB, MiB or GiB.
func (d *configDecoder) size(n *yaml.Node, where string, min int64) int64 {
	const hint = "write a size in bytes or with KiB, MiB or GiB, e.g. 4MiB"
	if n.Kind != yaml.ScalarNode || (n.ShortTag() != "!!int" && n.ShortTag() != "!!str") {
		d.Fail(n, hint, "%s must be a size, got %s", where, yamlstrict.KindName(n))
		return 0
	}
	s := strings.TrimSpace(n.Value)
	mult, num := int64(1), s
	for _, u := range []struct {
		suffix string
		m      int64
	}{{"KiB", 1 << 10}, {"MiB", 1 << 20}, {"GiB", 1 << 30}} {
		if v, ok := strings.CutSuffix(s, u.suffix); ok {
			num, mult = strings.TrimSpace(v), u.m
			break
		}
	}
	v, err := strconv.ParseInt(num, 10, 64)
	switch {
	case err != nil || v > (1<<40)/mult:
		d.Fail(n, hint, "%s %q is not a size", where, s)
		return 0
	case v*mult < min:
		d.Fail(n, fmt.Sprintf("use a size of at least %d bytes; a smaller limit refuses every request", min), "%s: %s is out of range", where, s)
		return 0
	}
	return v * mult
}

func (d *configDecoder) projectFile(n *yaml.Node, c *File) []upstream.ServerConfig {
	for _, kv := range d.Known(n, "project_file", projectFileKeys) {
		switch kv.Key {
		case "path":
			c.ProjectFile = d.Path(kv.Value, "project_file.path")
		case "trust":
			c.TrustProjectFile, _ = d.Bool(kv.Value, "project_file.trust")
		}
	}
	if c.ProjectFile == "" {
		d.Fail(n, "add `path: .mcp.json`", "project_file.path is required")
		return nil
	}
	servers, err := upstream.LoadProjectServers(c.ProjectFile, c.TrustProjectFile)
	if err != nil {
		d.Fail(n, "set project_file.trust: true only for a file you have read and trust", "%v", err)
		return nil
	}
	return servers
}

var clientKeys = []string{"principal", "tenant", "role", "token_env", "token_sha256", "self_approve"}

// The keys of the other sections (see [KeyPaths]).
var (
	projectFileKeys = []string{"path", "trust"}
	operatorKeys    = []string{"name", "token_env", "token_sha256"}
	uiKeys          = []string{"path"}
	approvalsKeys   = []string{"wait", "expires", "elicitation"}
	limitsKeys      = []string{"max_request_bytes", "call_timeout", "cancel_grace", "session_idle"}
	auditKeys       = []string{"redact_args", "head_interval", "head_file", "head_webhook"}
	metricsKeys     = []string{"listen"}
)

func (d *configDecoder) client(n *yaml.Node, where string, needToken bool) Client {
	var c Client
	var tokenNode *yaml.Node
	for _, kv := range d.Known(n, where, clientKeys) {
		w := where + "." + kv.Key
		switch kv.Key {
		case "principal":
			c.Principal, _ = d.NonEmpty(kv.Value, w)
		case "tenant":
			c.Tenant = d.tenant(kv.Value, w)
		case "role":
			c.Role, _ = d.NonEmpty(kv.Value, w)
		case "self_approve":
			c.SelfApprove, _ = d.Bool(kv.Value, w)
		case "token_env", "token_sha256":
			if !needToken {
				d.Fail(kv.KeyNode, "the stdio front has no token: whoever starts the process is this identity", "%s: stdio takes no token", w)
				continue
			}
			if tokenNode != nil {
				d.Fail(kv.KeyNode, "give either token_env or token_sha256", "%s: two tokens", where)
				continue
			}
			tokenNode = kv.Value
			c.TokenHash = d.token(kv.Key, kv.Value, w)
		}
	}
	if needToken && c.Principal == "" {
		d.Fail(n, "name who this client is, e.g. `principal: alice`", "%s: principal is required", where)
	}
	if needToken && tokenNode == nil {
		d.Fail(n, "add token_env: VAR (the token is read from that variable) or token_sha256: sha256:<hex> (from `warden serve hash-token`)", "%s: a token is required", where)
	}
	return c
}

// tenant decodes a tenant name: a non-empty string without "/". The stateless
// front keys a principal's halt as "principal:<tenant>/<principal>", which names one
// identity only while the tenant has no "/" (tenant "a/b" with principal "c" and
// tenant "a" with principal "b/c" would share a key, and a halt of one would refuse
// the other).
func (d *configDecoder) tenant(n *yaml.Node, where string) string {
	s, ok := d.NonEmpty(n, where)
	if !ok {
		return ""
	}
	if strings.Contains(s, "/") {
		d.Fail(n, `write the tenant without "/" (e.g. "acme-eu" for "acme/eu"): a halt on the stateless front is keyed "principal:<tenant>/<principal>", so a "/" in the tenant could name two identities`, "%s %q contains \"/\"", where, s)
		return ""
	}
	return s
}

func (d *configDecoder) token(key string, n *yaml.Node, where string) string {
	s, ok := d.NonEmpty(n, where)
	if !ok {
		return ""
	}
	if key == "token_sha256" {
		if !tokenHashPattern.MatchString(s) {
			d.Fail(n, "write sha256: followed by 64 lower-case hex digits (warden serve hash-token prints it)", "%s is not a token hash", where)
			return ""
		}
		return s
	}
	tok := d.Getenv(s)
	switch {
	case tok == "" && d.stdioOnly:
		return ""
	case tok == "":
		d.Fail(n, "export "+s+" before starting the gateway", "%s names %s, which is not set", where, s)
		return ""
	case len(tok) < 16:
		d.Fail(n, "use a random token of at least 16 characters, e.g. `openssl rand -hex 32`", "%s: the token in %s is too short (%d characters)", where, s, len(tok))
		return ""
	}
	return inbox.HashToken(tok)
}

// remember refuses a token hash used twice: an operator token that is also a client
// token would let an agent decide its own approvals.
func (d *configDecoder) remember(n *yaml.Node, hash, who string) {
	if hash == "" {
		return
	}
	if d.hashes == nil {
		d.hashes = map[string]string{}
	}
	if prev, ok := d.hashes[hash]; ok {
		d.Fail(n, "give every client and operator its own token", "%s uses the same token as %s", who, prev)
		return
	}
	d.hashes[hash] = who
}

func (d *configDecoder) clients(n *yaml.Node) []Client {
	if n.Kind != yaml.SequenceNode {
		d.Fail(n, "clients is a list of {principal, role, token_env | token_sha256}", "clients must be a list, not %s", yamlstrict.KindName(n))
		return nil
	}
	var out []Client
	for i, item := range n.Content {
		where := fmt.Sprintf("clients[%d]", i)
		c := d.client(item, where, true)
		d.remember(item, c.TokenHash, "client "+c.Principal)
		out = append(out, c)
	}
	return out
}

func (d *configDecoder) operators(n *yaml.Node) []inbox.Operator {
	if n.Kind != yaml.SequenceNode {
		d.Fail(n, "operators is a list of {name, token_env | token_sha256}", "operators must be a list, not %s", yamlstrict.KindName(n))
		return nil
	}
	var out []inbox.Operator
	names := map[string]bool{}
	for i, item := range n.Content {
		where := fmt.Sprintf("operators[%d]", i)
		var o inbox.Operator
		var tokenNode *yaml.Node
		for _, kv := range d.Known(item, where, operatorKeys) {
			w := where + "." + kv.Key
			if kv.Key == "name" {
				o.Name, _ = d.NonEmpty(kv.Value, w)
				continue
			}
			if tokenNode != nil {
				d.Fail(kv.KeyNode, "give either token_env or token_sha256", "%s: two tokens", where)
				continue
			}
			tokenNode = kv.Value
			o.TokenHash = d.token(kv.Key, kv.Value, w)
		}
		switch {
		case o.Name == "":
			d.Fail(item, "name the operator; decisions are recorded under this name", "%s: name is required", where)
		case names[o.Name]:
			d.Fail(item, "give every operator a different name", "%s: operator %q is listed twice", where, o.Name)
		case tokenNode == nil:
			d.Fail(item, "add token_env: VAR or token_sha256: sha256:<hex>", "%s: a token is required", where)
		}
		names[o.Name] = true
		d.remember(item, o.TokenHash, "operator "+o.Name)
		out = append(out, o)
	}
	return out
}

func (d *configDecoder) ui(n *yaml.Node, c *File) {
	for _, kv := range d.Known(n, "ui", uiKeys) {
		s, ok := d.NonEmpty(kv.Value, "ui.path")
		if ok && (!strings.HasPrefix(s, "/") || !strings.HasSuffix(s, "/") || len(s) < 3) {
			d.Fail(kv.Value, "write a path that starts and ends with /, e.g. /ui/", "ui.path %q must start and end with /", s)
		}
		c.UIPath = s
	}
}

func (d *configDecoder) approvals(n *yaml.Node, c *File) {
	for _, kv := range d.Known(n, "approvals", approvalsKeys) {
		switch kv.Key {
		case "wait":
			c.ApprovalWait = d.duration(kv.Value, "approvals.wait")
		case "expires":
			c.ApprovalExpiry = d.duration(kv.Value, "approvals.expires")
		case "elicitation":
			s, _ := d.Str(kv.Value, "approvals.elicitation")
			switch s {
			case "allow":
				c.Elicitation = true
			case "never":
				c.Elicitation = false
			default:
				d.Fail(kv.Value, "write allow (the users of clients with self_approve: true may approve their own calls) or never (only operators decide; the default)", "approvals.elicitation %q must be allow or never", s)
			}
		}
	}
}

func (d *configDecoder) limits(n *yaml.Node, c *File) {
	for _, kv := range d.Known(n, "limits", limitsKeys) {
		switch kv.Key {
		case "max_request_bytes":
			c.MaxRequestBytes = d.size(kv.Value, "limits.max_request_bytes", 1024)
		case "call_timeout":
			c.CallTimeout = d.duration(kv.Value, "limits.call_timeout")
		case "cancel_grace":
			c.CancelGrace = d.duration(kv.Value, "limits.cancel_grace")
		case "session_idle":
			c.SessionIdle = d.duration(kv.Value, "limits.session_idle")
		}
	}
}

func (d *configDecoder) audit(n *yaml.Node, c *File) {
	for _, kv := range d.Known(n, "audit", auditKeys) {
		switch kv.Key {
		case "redact_args":
			c.RedactArgs, _ = d.Bool(kv.Value, "audit.redact_args")
		case "head_interval":
			c.HeadInterval = d.duration(kv.Value, "audit.head_interval")
			if c.HeadInterval > 0 && c.HeadInterval < time.Second {
				d.Fail(kv.Value, "use 1s or more", "audit.head_interval %s is too short", c.HeadInterval)
			}
		case "head_file":
			if s, ok := d.NonEmpty(kv.Value, "audit.head_file"); ok {
				if !filepath.IsAbs(s) {
					s = filepath.Join(d.Dir, s)
				}
				c.HeadFile = s
			}
		case "head_webhook":
			if s, ok := d.NonEmpty(kv.Value, "audit.head_webhook"); ok {
				u, err := url.Parse(s)
				if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
					d.Fail(kv.Value, "write an http:// or https:// URL, e.g. https://anchor.example.com/warden-head", "audit.head_webhook %q is not an http(s) URL", s)
				}
				c.HeadWebhook = s
			}
		}
	}
}

func (d *configDecoder) metrics(n *yaml.Node, c *File) {
	for _, kv := range d.Known(n, "metrics", metricsKeys) {
		s, ok := d.NonEmpty(kv.Value, "metrics.listen")
		if !ok {
			continue
		}
		if _, port, err := net.SplitHostPort(s); err != nil || !validPort(port) {
			d.Fail(kv.Value, "write host:port with a numeric port, e.g. 127.0.0.1:9464 (0 picks a free port)", "metrics.listen %q is not host:port", s)
			continue
		}
		c.MetricsListen, d.metricsListen = s, kv.Value
	}
}

// validPort reports whether port is a decimal port number, 0 to 65535.
func validPort(port string) bool {
	n, err := strconv.ParseUint(port, 10, 16)
	return err == nil && n <= 65535
}
