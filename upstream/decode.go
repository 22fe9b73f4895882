// Decoding the servers and transport sections of a YAML configuration: one decoder
// shared by the gateway file (package gateway) and warden run's mcp: section
// ([DecodeToolsConfig]), so the two files accept the same servers the same way.

package upstream

import (
	"path/filepath"
	"slices"
	"sort"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/internal/yamlstrict"
)

// SectionDecoder decodes the server and transport parts of a YAML configuration,
// adding located errors to the embedded decoder. Dir anchors relative paths (a
// server's dir), Prefix is put before key names in messages (e.g. "mcp."), and Getenv
// expands ${VAR} in header values. The embedded decoder is internal, so only the
// packages of this module build one.
type SectionDecoder struct {
	yamlstrict.Decoder
	Dir    string
	Prefix string
	Getenv func(string) string
}

// Path decodes a non-empty path at n, made absolute against Dir.
func (d *SectionDecoder) Path(n *yaml.Node, where string) string {
	s, ok := d.NonEmpty(n, where)
	if !ok {
		return ""
	}
	if !filepath.IsAbs(s) {
		s = filepath.Join(d.Dir, s)
	}
	return s
}

var transportKeys = []string{"allow_commands", "commands", "allow_urls", "hosts", "allow_insecure_loopback", "keep_secret_env", "env_deny", "max_connections_per_server"}

// Transport decodes a transport section into t and checks it ([TransportPolicy.Validate]).
func (d *SectionDecoder) Transport(n *yaml.Node, t *TransportPolicy) {
	for _, kv := range d.Known(n, d.Prefix+"transport", transportKeys) {
		where := d.Prefix + "transport." + kv.Key
		switch kv.Key {
		case "allow_commands":
			t.AllowCommands, _ = d.Bool(kv.Value, where)
		case "commands":
			t.Commands, _ = d.StrList(kv.Value, where)
		case "allow_urls":
			t.AllowURLs, _ = d.Bool(kv.Value, where)
		case "hosts":
			t.Hosts, _ = d.StrList(kv.Value, where)
		case "allow_insecure_loopback":
			t.AllowInsecureLoopback, _ = d.Bool(kv.Value, where)
		case "keep_secret_env":
			t.KeepSecretEnv, _ = d.Bool(kv.Value, where)
		case "env_deny":
			t.EnvDeny, _ = d.StrList(kv.Value, where)
		case "max_connections_per_server":
			if v, ok := d.Int(kv.Value, where, 1); ok {
				t.MaxConnectionsPerServer = int(v)
			}
		}
	}
	if err := t.Validate(); err != nil {
		d.Fail(n, "fix the transport section", "%stransport: %v", d.Prefix, err)
	}
}

var serverKeys = []string{"command", "args", "env", "dir", "url", "headers", "prefix", "protocol"}

// ServerKeys returns the keys a server's entry in a servers mapping may have, and
// TransportKeys those of a transport section (new slices each call), for the
// configuration reference's drift test.
func ServerKeys() []string { return slices.Clone(serverKeys) }

// TransportKeys: see [ServerKeys].
func TransportKeys() []string { return slices.Clone(transportKeys) }

// Servers decodes a servers mapping, each server checked ([ServerConfig.Validate]),
// sorted by name. An invalid server is reported and left out.
func (d *SectionDecoder) Servers(n *yaml.Node) []ServerConfig {
	kvs, ok := d.MappingHint(n, d.Prefix+"servers", "servers maps a name to {command, args, env} or {url, headers}")
	if !ok {
		return nil
	}
	var out []ServerConfig
	for _, kv := range kvs {
		s := ServerConfig{Name: kv.Key}
		where := d.Prefix + "servers." + kv.Key
		for _, e := range d.Known(kv.Value, where, serverKeys) {
			w := where + "." + e.Key
			switch e.Key {
			case "command":
				s.Command, _ = d.NonEmpty(e.Value, w)
			case "args":
				s.Args, _ = d.StrList(e.Value, w)
			case "env":
				s.Env = d.StrMap(e.Value, w)
			case "dir":
				s.Dir = d.Path(e.Value, w)
			case "url":
				s.URL, _ = d.NonEmpty(e.Value, w)
			case "headers":
				s.Headers = d.headers(e.Value, w)
			case "prefix":
				p, _ := d.Str(e.Value, w)
				s.Prefix = &p
			case "protocol":
				if e.Value.Kind == yaml.ScalarNode && e.Value.ShortTag() == "!!timestamp" {
					// An unquoted version (2025-11-25) reads as a date: it is meant as written.
					s.Protocol = e.Value.Value
				} else {
					s.Protocol, _ = d.NonEmpty(e.Value, w)
				}
			}
		}
		if err := s.Validate(); err != nil {
			d.Fail(kv.KeyNode, "see the servers section of examples/gateway/gateway.yaml", "%v", err)
			continue
		}
		out = append(out, s)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Name < out[j].Name })
	return out
}

// headers decodes header values, expanding ${VAR} from the environment so that
// secrets stay out of the file. A missing variable is an error.
func (d *SectionDecoder) headers(n *yaml.Node, where string) map[string]string {
	m := d.StrMap(n, where)
	for k, v := range m {
		var missing []string
		m[k] = envRef.ReplaceAllStringFunc(v, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			val := d.Getenv(name)
			if val == "" {
				missing = append(missing, name)
			}
			return val
		})
		if len(missing) > 0 {
			d.Fail(n, "export the variable before starting the gateway", "%s.%s names ${%s}, which is not set", where, k, missing[0])
		}
	}
	return m
}
