// Project-file discovery: reading the server definitions a repository ships in an
// ".mcp.json" file, the format Claude Code and other MCP clients share.
//
// A project file comes with the code being worked on, so it is input from whoever
// wrote that code. It is read only when the operator trusts it explicitly, and even
// then trust is not permission: every server it defines still goes through
// [TransportPolicy.Admit], so a trusted file cannot start a command or reach a URL
// the transport policy does not allow.

package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
)

// ErrUntrustedProjectFile is wrapped by the error [LoadProjectServers] returns for a
// file it was not allowed to read.
var ErrUntrustedProjectFile = errors.New("project file is not trusted")

// maxProjectFileSize bounds how much of a project file is read; a real one is a few
// kilobytes.
const maxProjectFileSize = 1 << 20

// envRef is a ${VAR} reference, expanded in header values (and in a project file's
// env values).
var envRef = regexp.MustCompile(`\$\{([A-Za-z_][A-Za-z0-9_]*)\}`)

// LoadProjectServers reads MCP server definitions from a project file in the format
// Claude Code and other clients use (".mcp.json"):
//
//	{"mcpServers": {
//	  "name": {"command": "...", "args": ["..."], "env": {"K": "V"}},
//	  "other": {"type": "http", "url": "https://...", "headers": {"K": "V"}}
//	}}
//
// When trusted is false it reads nothing and returns an error wrapping
// [ErrUntrustedProjectFile] that names the file and how to trust it. Trusting the
// file is not permission: the returned configs must still pass
// [TransportPolicy.Admit], which by default refuses every command and URL.
//
// Decoding is strict; each of these is an error naming the file and, where there is
// one, the server: a syntax error, an unknown or duplicate key at any level, a value
// of the wrong type (null included), a missing "mcpServers" object (an empty one
// yields no servers), both or neither of command and url, args or env on a url
// server, headers on a command server, a "type" that does not fit ("stdio" goes with
// command; "http" and "streamable-http" with url; "sse" is not supported), a server
// name [ServerConfig.Validate] refuses.
//
// In env and header values, ${VAR} is replaced by the gateway's environment variable
// VAR (an unset or empty variable is an error). A VAR that the transport policy treats
// as a secret (a name its env_deny patterns match, unless keep_secret_env) makes
// [TransportPolicy.Admit] refuse the server: the child's environment is filtered by
// name, and a project file must not hand a secret over under another name;
// any other "${" (including the ${VAR:-default} form), and "${" in command, args or
// url, is an error rather than being passed on literally.
//
// A command server's Dir is the directory holding the file, as clients that read
// project files run them from the project root. The result is sorted by name; it is
// nil when there is an error.
func LoadProjectServers(path string, trusted bool) ([]ServerConfig, error) {
	if !trusted { // fail closed: an untrusted file is not even opened
		return nil, fmt.Errorf("%w: %s; its servers were not loaded. Read it, then trust it in the gateway config with project_file: {path: %s, trust: true} (trusting it does not allow its commands or URLs: the transport section still decides)", ErrUntrustedProjectFile, path, path)
	}
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("project file: %w", err)
	}
	defer f.Close()
	data, err := io.ReadAll(io.LimitReader(f, maxProjectFileSize+1))
	if err != nil {
		return nil, fmt.Errorf("project file %s: %w", path, err)
	}
	if len(data) > maxProjectFileSize {
		return nil, fmt.Errorf("project file %s: larger than %d bytes", path, maxProjectFileSize)
	}
	dir, err := filepath.Abs(filepath.Dir(path))
	if err != nil {
		return nil, fmt.Errorf("project file %s: %w", path, err)
	}
	servers, err := parseProjectServers(data, dir)
	if err != nil {
		return nil, fmt.Errorf("project file %s: %w", path, err)
	}
	return servers, nil
}

// parseProjectServers decodes a project file's content; dir is the working directory
// given to command servers.
func parseProjectServers(data []byte, dir string) ([]ServerConfig, error) {
	if err := checkDuplicateKeys(data); err != nil {
		return nil, err
	}
	top, err := object(data, "the file")
	if err != nil {
		return nil, err
	}
	for k := range top {
		if k != "mcpServers" {
			return nil, fmt.Errorf("unknown key %q at the top level (known: mcpServers)", k)
		}
	}
	raw, ok := top["mcpServers"]
	if !ok {
		return nil, errors.New(`no "mcpServers" object`)
	}
	defs, err := object(raw, `"mcpServers"`)
	if err != nil {
		return nil, err
	}
	names := make([]string, 0, len(defs))
	for name := range defs {
		names = append(names, name)
	}
	slices.Sort(names)
	out := make([]ServerConfig, 0, len(names))
	for _, name := range names {
		if !serverNamePattern.MatchString(name) {
			return nil, fmt.Errorf("server name %q: use 1 to 64 letters, digits, '_' or '-'", name)
		}
		s, err := parseProjectServer(name, defs[name], dir)
		if err != nil {
			return nil, fmt.Errorf("server %q: %w", name, err)
		}
		out = append(out, s)
	}
	return out, nil
}

var projectServerKeys = []string{"type", "command", "args", "env", "url", "headers"}

func parseProjectServer(name string, raw json.RawMessage, dir string) (ServerConfig, error) {
	fields, err := object(raw, "the server")
	if err != nil {
		return ServerConfig{}, err
	}
	for k := range fields {
		if !slices.Contains(projectServerKeys, k) {
			return ServerConfig{}, fmt.Errorf("unknown key %q (known: %s)", k, strings.Join(projectServerKeys, ", "))
		}
	}
	s := ServerConfig{Name: name}
	var typ string
	if v, ok := fields["type"]; ok {
		if err := decodeField(v, "type", &typ); err != nil {
			return ServerConfig{}, err
		}
	}
	if v, ok := fields["command"]; ok {
		if err := decodeField(v, "command", &s.Command); err != nil {
			return ServerConfig{}, err
		}
		if s.Command == "" {
			return ServerConfig{}, errors.New(`"command" is empty`)
		}
	}
	if v, ok := fields["url"]; ok {
		if err := decodeField(v, "url", &s.URL); err != nil {
			return ServerConfig{}, err
		}
		if s.URL == "" {
			return ServerConfig{}, errors.New(`"url" is empty`)
		}
	}
	if v, ok := fields["args"]; ok {
		if err := decodeField(v, "args", &s.Args); err != nil {
			return ServerConfig{}, err
		}
	}
	if v, ok := fields["env"]; ok {
		if err := decodeField(v, "env", &s.Env); err != nil {
			return ServerConfig{}, err
		}
	}
	if v, ok := fields["headers"]; ok {
		if err := decodeField(v, "headers", &s.Headers); err != nil {
			return ServerConfig{}, err
		}
	}

	switch {
	case s.Command != "" && s.URL != "":
		return ServerConfig{}, errors.New(`give either "command" or "url", not both`)
	case s.Command == "" && s.URL == "":
		return ServerConfig{}, errors.New(`give "command" (a local server) or "url" (a remote one)`)
	case s.URL != "" && (s.Args != nil || s.Env != nil):
		return ServerConfig{}, errors.New(`"args" and "env" apply only to a "command" server`)
	case s.Command != "" && s.Headers != nil:
		return ServerConfig{}, errors.New(`"headers" apply only to a "url" server`)
	}
	switch typ {
	case "":
	case "stdio":
		if s.Command == "" {
			return ServerConfig{}, errors.New(`type "stdio" needs "command", not "url"`)
		}
	case "http", "streamable-http":
		if s.URL == "" {
			return ServerConfig{}, fmt.Errorf(`type %q needs "url", not "command"`, typ)
		}
	case "sse":
		return ServerConfig{}, errors.New(`type "sse" (the deprecated HTTP+SSE transport) is not supported; use a streamable HTTP endpoint with type "http"`)
	default:
		return ServerConfig{}, fmt.Errorf(`unknown type %q (known: stdio, http, streamable-http)`, typ)
	}

	if strings.Contains(s.Command, "${") || strings.Contains(s.URL, "${") {
		return ServerConfig{}, errors.New(`"${...}" in command or url is not expanded; write the value itself`)
	}
	for i, a := range s.Args {
		if strings.Contains(a, "${") {
			return ServerConfig{}, fmt.Errorf(`args[%d]: "${...}" in args is not expanded; write the value itself`, i)
		}
	}
	if err := expandProjectRefs(s.Env, "env", &s.EnvRefs); err != nil {
		return ServerConfig{}, err
	}
	if err := expandProjectRefs(s.Headers, "headers", &s.EnvRefs); err != nil {
		return ServerConfig{}, err
	}
	if s.Command != "" {
		s.Dir = dir
	}
	// The checks above leave nothing for Validate to refuse; it stays as the backstop
	// that keeps this loader in step with the gateway config.
	if err := s.Validate(); err != nil {
		return ServerConfig{}, err
	}
	return s, nil
}

// expandProjectRefs replaces ${VAR} in the values of m from the environment, and adds
// each VAR to refs.
func expandProjectRefs(m map[string]string, where string, refs *[]string) error {
	for k, v := range m {
		var missing string
		nv := envRef.ReplaceAllStringFunc(v, func(ref string) string {
			name := envRef.FindStringSubmatch(ref)[1]
			if !slices.Contains(*refs, name) {
				*refs = append(*refs, name)
			}
			val := os.Getenv(name)
			if val == "" && missing == "" {
				missing = name
			}
			return val
		})
		switch {
		case missing != "":
			return fmt.Errorf("%s.%s names ${%s}, which is not set in the gateway's environment", where, k, missing)
		case strings.Contains(envRef.ReplaceAllString(v, ""), "${"):
			return fmt.Errorf("%s.%s: only ${VAR} is expanded (no defaults or other forms)", where, k)
		}
		m[k] = nv
	}
	return nil
}

// object decodes raw as a JSON object, refusing null and every other type.
func object(raw json.RawMessage, what string) (map[string]json.RawMessage, error) {
	if !bytes.HasPrefix(bytes.TrimSpace(raw), []byte("{")) {
		return nil, fmt.Errorf("%s must be a JSON object, got %s", what, jsonKind(raw))
	}
	var m map[string]json.RawMessage
	if err := json.Unmarshal(raw, &m); err != nil {
		return nil, fmt.Errorf("%s: %w", what, err)
	}
	return m, nil
}

// decodeField decodes one field into v (a string, []string or map[string]string),
// refusing null, which encoding/json would accept silently.
func decodeField(raw json.RawMessage, key string, v any) error {
	if bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return fmt.Errorf("%q is null", key)
	}
	if err := json.Unmarshal(raw, v); err != nil {
		var want string
		switch v.(type) {
		case *string:
			want = "a string"
		case *[]string:
			want = "an array of strings"
		default:
			want = "an object of string values"
		}
		return fmt.Errorf("%q must be %s, got %s", key, want, jsonKind(raw))
	}
	return nil
}

// jsonKind names the JSON type of raw for an error message.
func jsonKind(raw json.RawMessage) string {
	t := bytes.TrimSpace(raw)
	if len(t) == 0 {
		return "nothing"
	}
	switch t[0] {
	case '{':
		return "an object"
	case '[':
		return "an array"
	case '"':
		return "a string"
	case 't', 'f':
		return "a boolean"
	case 'n':
		return "null"
	default:
		return "a number"
	}
}

// checkDuplicateKeys reports the first object key that appears twice in one object,
// anywhere in data, and any syntax error or trailing data; encoding/json would keep
// the last duplicate silently.
func checkDuplicateKeys(data []byte) error {
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	if err := walkJSON(dec, "", 0); err != nil {
		return err
	}
	if _, err := dec.Token(); err != io.EOF {
		return errors.New("invalid JSON: data after the top-level value")
	}
	return nil
}

// maxJSONDepth bounds nesting, so a hostile file cannot exhaust the stack.
const maxJSONDepth = 64

func walkJSON(dec *json.Decoder, at string, depth int) error {
	if depth > maxJSONDepth {
		return fmt.Errorf("invalid JSON: nested deeper than %d levels", maxJSONDepth)
	}
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("invalid JSON: %w", err)
	}
	switch tok {
	case json.Delim('{'):
		seen := map[string]bool{}
		for dec.More() {
			kt, err := dec.Token()
			if err != nil {
				return fmt.Errorf("invalid JSON: %w", err)
			}
			k := kt.(string) // inside an object the decoder yields only string keys
			where := k
			if at != "" {
				where = at + "." + k
			}
			if seen[k] {
				return fmt.Errorf("duplicate key %q", where)
			}
			seen[k] = true
			if err := walkJSON(dec, where, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
	case json.Delim('['):
		for dec.More() {
			if err := walkJSON(dec, at, depth+1); err != nil {
				return err
			}
		}
		if _, err := dec.Token(); err != nil {
			return fmt.Errorf("invalid JSON: %w", err)
		}
	}
	return nil
}
