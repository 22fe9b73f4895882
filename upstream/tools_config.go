// Decoding the MCP section of another program's configuration (warden run's
// agent.yaml), with the gateway configuration's own decoders for servers and transport.

package upstream

import (
	"path/filepath"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/internal/yamlstrict"
)

// toolsConfigKeys are the keys of an MCP section.
var toolsConfigKeys = []string{"servers", "transport", "project_file", "trust_project_settings"}

// DecodeToolsConfig decodes the MCP section of a configuration file (the value of
// warden run's `mcp:` key) into a [ToolsConfig]. file names the file in errors and
// anchors relative paths (a server's dir, the project file); getenv expands ${VAR} in
// header values. prefix is put before key names in messages, e.g. "mcp.".
//
// The section is a mapping of:
//
//	servers:                 # as in a gateway configuration: a name maps to
//	  notes:                 # {command, args, env, dir, prefix} or {url, headers, prefix}
//	    command: notes-server
//	    args: [-dir, notes]
//	transport:               # as in a gateway configuration (allow_commands, commands,
//	  allow_commands: true   # allow_urls, hosts, allow_insecure_loopback,
//	  commands: [notes-server] # keep_secret_env, env_deny, max_connections_per_server)
//	project_file: .mcp.json  # optional: read only with trust_project_settings
//	trust_project_settings: false
//
// Decoding is strict: unknown keys, values of the wrong type, invalid servers and an
// invalid transport policy are errors. Every error is a located *warden.ConfigError
// (file:line:column), joined with errors.Join when there are several. Nothing is
// read, started or connected to: the project file is read by [RegisterTools], and
// only when it is trusted.
func DecodeToolsConfig(file string, n *yaml.Node, prefix string, getenv func(string) string) (ToolsConfig, error) {
	abs, err := filepath.Abs(file)
	if err != nil {
		abs = file
	}
	d := &SectionDecoder{Decoder: yamlstrict.Decoder{File: file, StringKeys: true}, Dir: filepath.Dir(abs), Prefix: prefix, Getenv: getenv}
	var c ToolsConfig
	where := strings.TrimSuffix(prefix, ".")
	if where == "" {
		where = "the MCP section"
	}
	for _, kv := range d.Known(n, where, toolsConfigKeys) {
		switch kv.Key {
		case "servers":
			c.Servers = d.Servers(kv.Value)
		case "transport":
			d.Transport(kv.Value, &c.Transport)
		case "project_file":
			c.ProjectFile = d.Path(kv.Value, prefix+"project_file")
		case "trust_project_settings":
			c.TrustProjectSettings, _ = d.Bool(kv.Value, prefix+"trust_project_settings")
		}
	}
	if len(d.Errs) > 0 {
		return ToolsConfig{}, d.Err()
	}
	return c, nil
}
