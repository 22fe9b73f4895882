// Server configuration: what one upstream MCP server is and how it is named.

package upstream

import (
	"fmt"
	"regexp"
	"slices"
	"strings"
)

// ServerConfig describes one upstream MCP server: either a command started as a
// child process speaking MCP over stdin/stdout, or a streamable HTTP URL.
type ServerConfig struct {
	// Name identifies the server in tool names, events and errors.
	Name string
	// Command is the program to start (a bare name, looked up in PATH); Args its
	// arguments; Env extra environment entries for the child; Dir its working
	// directory (empty: the gateway's).
	Command string
	Args    []string
	Env     map[string]string
	Dir     string
	// URL is the streamable HTTP endpoint; Headers are sent with every request.
	URL     string
	Headers map[string]string
	// Prefix is put in front of every tool name of this server. Nil means the
	// default "mcp__<Name>__"; an empty prefix is allowed when names do not collide.
	Prefix *string
	// Protocol is the newest MCP protocol version the gateway asks this server for
	// (one of [ProtocolVersions]). Empty means the newest the gateway speaks
	// (2026-07-28, stateless); a server that does not offer it is spoken to in the
	// newest session-based version it answers initialize with. Pin a session-based
	// version for a server whose requests during a call (sampling, elicitation, roots) come
	// as server-to-client requests and that refuses them at 2026-07-28.
	Protocol string

	// EnvRefs names the variables of Warden's own environment that a project file's
	// ${VAR} references put into Env or Headers ([LoadProjectServers] sets it):
	// [TransportPolicy.Admit] refuses the server when one of them is a secret by the
	// policy's env_deny patterns (unless keep_secret_env), since the child's
	// environment is filtered by name and a reference could rename a secret.
	EnvRefs []string
}

// Transport names the transport the server uses: "command" or "url".
func (c ServerConfig) Transport() string {
	if c.URL != "" {
		return "url"
	}
	return "command"
}

// ToolPrefix returns the prefix of this server's governed tool names.
func (c ServerConfig) ToolPrefix() string {
	if c.Prefix != nil {
		return *c.Prefix
	}
	return "mcp__" + c.Name + "__"
}

var serverNamePattern = regexp.MustCompile(`^[A-Za-z0-9_-]{1,64}$`)

// toolNamePattern is what a governed tool name may hold: the characters MCP clients
// accept in tool names.
var toolNamePattern = regexp.MustCompile(`^[A-Za-z0-9_.-]{1,128}$`)

// Validate reports a configuration that cannot describe a server: a bad name, both or
// neither of Command and URL, or a prefix with characters a tool name cannot hold.
func (c ServerConfig) Validate() error {
	switch {
	case !serverNamePattern.MatchString(c.Name):
		return fmt.Errorf("server name %q: use 1 to 64 letters, digits, '_' or '-'", c.Name)
	case c.Command != "" && c.URL != "":
		return fmt.Errorf("server %q: give either command or url, not both", c.Name)
	case c.Command == "" && c.URL == "":
		return fmt.Errorf("server %q: give a command or a url", c.Name)
	case c.URL == "" && len(c.Headers) > 0:
		return fmt.Errorf("server %q: headers apply only to a url server", c.Name)
	case c.Command == "" && (len(c.Args) > 0 || len(c.Env) > 0 || c.Dir != ""):
		return fmt.Errorf("server %q: args, env and dir apply only to a command server", c.Name)
	}
	if p := c.ToolPrefix(); p != "" && !toolNamePattern.MatchString(p) {
		return fmt.Errorf("server %q: tool prefix %q may hold only letters, digits, '_', '.' and '-'", c.Name, p)
	}
	if c.Protocol != "" && !slices.Contains(protocolVersions, c.Protocol) {
		return fmt.Errorf("server %q: protocol %q is not a version the gateway speaks: use one of %s, or leave it out for the newest", c.Name, c.Protocol, strings.Join(protocolVersions, ", "))
	}
	return nil
}

// protocolVersions are the MCP versions the gateway can ask an upstream for, newest
// first.
var protocolVersions = []string{"2026-07-28", "2025-11-25", "2025-06-18"}

// ProtocolVersions returns the MCP versions [ServerConfig.Protocol] may name, newest
// first (a new slice each call).
func ProtocolVersions() []string { return slices.Clone(protocolVersions) }

// protocol is the version the gateway asks the server for.
func (c ServerConfig) protocol() string {
	if c.Protocol != "" {
		return c.Protocol
	}
	return protocolVersions[0]
}

// ValidToolName reports whether name can be a governed tool name.
func ValidToolName(name string) bool { return toolNamePattern.MatchString(name) }
