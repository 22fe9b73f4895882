// Package runfile reads the agent configuration of warden run (agent.yaml): the model
// provider, the policy, the prompt directives, the workspace, where checkpoints are
// kept and the MCP servers, and builds the model provider it names.
//
// It is its own package because the file is a format users write, with its own strict
// decoding and located errors (file:line:column), and is read by more than the command
// line that runs it; the command loads it and builds the run from it.
package runfile

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/internal/fileerr"
	"github.com/wardenhq/warden/internal/yamlargs"
	"github.com/wardenhq/warden/internal/yamlstrict"
	"github.com/wardenhq/warden/upstream"
)

// File is an agent configuration. Paths in it are relative to the file's directory as
// written, and made so here.
type File struct {
	// Path is the file it was read from.
	Path     string
	Provider Provider
	// Policy is the policy file; Role the policy's active role ("": its own).
	Policy, Role string
	// DirectivesPack is the prompt directives pack ("": none); DirectivesRole its role
	// ("": Role).
	DirectivesPack, DirectivesRole string
	// Instructions are the system prompt's first part ("": the default).
	Instructions string
	// MaxIterations bounds the agent loop (0: the agent's default).
	MaxIterations int
	// Workspace is the directory of the built-in tools ("": a new temporary one).
	Workspace string
	// CheckpointDir is where a pause writes its checkpoint file ("." by default).
	CheckpointDir string
	// Store is the DSN of the store that keeps checkpoints ("": files).
	Store string
	// MCP is the mcp: section; nil without one.
	MCP *upstream.ToolsConfig

	// The nodes errors about a section point at.
	directivesNode, workspaceNode, mcpNode *yaml.Node
}

// Section names a part of the file, for [File.ErrorAt].
type Section int

// The sections [File.ErrorAt] locates.
const (
	SectionDirectives Section = iota // directives: (its role, when one is given)
	SectionWorkspace                 // workspace:
	SectionMCP                       // mcp:
)

// ErrorAt returns a *warden.ConfigError in the file at the section s (no position when
// the file has no such section).
func (f *File) ErrorAt(s Section, msg, hint string) *warden.ConfigError {
	var n *yaml.Node
	switch s {
	case SectionDirectives:
		n = f.directivesNode
	case SectionWorkspace:
		n = f.workspaceNode
	case SectionMCP:
		n = f.mcpNode
	}
	return yamlstrict.Located(f.Path, n, msg, hint)
}

// Provider is the provider: section.
type Provider struct {
	// Name is anthropic, openai or scripted.
	Name, Model, BaseURL string
	MaxTokens            int
	// Replies are the scripted provider's turns, in order.
	Replies []agent.ModelResponse
}

var (
	fileKeys       = []string{"description", "provider", "policy", "role", "directives", "instructions", "max_iterations", "workspace", "checkpoint_dir", "store", "mcp"}
	providerKeys   = []string{"name", "model", "base_url", "max_tokens", "replies"}
	providerNames  = []string{"anthropic", "openai", "scripted"}
	directivesKeys = []string{"pack", "role"}
	replyKeys      = []string{"text", "calls"}
	callKeys       = []string{"id", "name", "args"}
)

// fileDoc words the document-level errors for the agent configuration.
var fileDoc = yamlstrict.Doc{
	Name:      "agent configuration",
	Plural:    "the agent configuration",
	EmptyHint: "write at least `provider:` and `policy:`",
	MultiHint: "remove the '---' and what follows",
}

// Load reads and strictly decodes the agent configuration in file. Errors are located
// *warden.ConfigError values, joined with errors.Join.
func Load(file string) (*File, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return nil, &warden.ConfigError{File: file, Msg: "cannot read the agent configuration: " + fileerr.Text(err), Hint: "check the path given to --config"}
	}
	return Parse(file, data)
}

// Parse strictly decodes an agent configuration; file names it in errors and is the
// directory its relative paths start from.
func Parse(file string, data []byte) (*File, error) {
	d := &decoder{Decoder: yamlstrict.Decoder{File: file}, dir: filepath.Dir(file)}
	root := d.Document(data, fileDoc)
	if root == nil {
		return nil, d.Err()
	}
	f := d.decodeFile(root)
	if len(d.Errs) > 0 {
		return nil, d.Err()
	}
	return f, nil
}

// decoder decodes agent.yaml: the schema is here, the strict reading yamlstrict's.
type decoder struct {
	yamlstrict.Decoder
	dir string
}

// entries returns a mapping's entries, reporting unknown keys.
func (d *decoder) entries(n *yaml.Node, where string, known []string) []yamlstrict.KV {
	kvs, _ := d.Mapping(n, where)
	var out []yamlstrict.KV
	for _, kv := range kvs {
		if !slices.Contains(known, kv.Key) {
			d.Fail(kv.KeyNode, "known keys: "+strings.Join(known, ", "), "unknown key %q in %s", kv.Key, where)
			continue
		}
		out = append(out, kv)
	}
	return out
}

func (d *decoder) integer(n *yaml.Node, where string, min int) (int, bool) {
	v, ok := d.Int(n, where, int64(min))
	return int(v), ok
}

// path resolves a path from the file against the file's directory.
func (d *decoder) path(n *yaml.Node, where string) string {
	s, ok := d.NonEmpty(n, where)
	if !ok {
		return ""
	}
	if filepath.IsAbs(s) {
		return filepath.Clean(s)
	}
	return filepath.Join(d.dir, s)
}

func (d *decoder) decodeFile(root *yaml.Node) *File {
	f := &File{Path: d.File, CheckpointDir: "."}
	var providerNode, policyNode *yaml.Node
	for _, e := range d.entries(root, "the agent configuration", fileKeys) {
		switch e.Key {
		case "description":
			d.Str(e.Value, "description")
		case "provider":
			providerNode = e.Value
			f.Provider = d.decodeProvider(e.Value)
		case "policy":
			policyNode = e.Value
			f.Policy = d.path(e.Value, "policy")
		case "role":
			f.Role, _ = d.NonEmpty(e.Value, "role")
		case "directives":
			f.directivesNode = e.Value
			for _, de := range d.entries(e.Value, "directives", directivesKeys) {
				switch de.Key {
				case "pack":
					f.DirectivesPack = d.path(de.Value, "directives.pack")
				case "role":
					f.DirectivesRole, _ = d.NonEmpty(de.Value, "directives.role")
					f.directivesNode = de.Value
				}
			}
			if f.DirectivesPack == "" && e.Value.Kind == yaml.MappingNode && !hasEntry(e.Value, "pack") {
				d.Fail(e.Value, "name the pack file: `directives: {pack: pack.yaml, role: support}`", "directives.pack is required")
			}
		case "instructions":
			f.Instructions, _ = d.Str(e.Value, "instructions")
		case "max_iterations":
			f.MaxIterations, _ = d.integer(e.Value, "max_iterations", 1)
		case "workspace":
			f.Workspace, f.workspaceNode = d.path(e.Value, "workspace"), e.Value
		case "checkpoint_dir":
			f.CheckpointDir = d.path(e.Value, "checkpoint_dir")
		case "store":
			f.Store, _ = d.NonEmpty(e.Value, "store")
		case "mcp":
			f.mcpNode = e.Value
			f.MCP = d.decodeMCP(e.Value)
		}
	}
	if providerNode == nil {
		d.Fail(root, "add `provider: {name: anthropic, model: claude-sonnet-4-5}` (or openai, or scripted with replies)", "provider is required")
	}
	if policyNode == nil {
		d.Fail(root, "add `policy: <file>`: warden run never runs tools without a policy", "policy is required")
	}
	return f
}

// decodeMCP decodes the mcp: section with the gateway configuration's own decoders
// for servers and transport (package upstream), keeping its located errors.
func (d *decoder) decodeMCP(n *yaml.Node) *upstream.ToolsConfig {
	tc, err := upstream.DecodeToolsConfig(d.File, n, "mcp.", os.Getenv)
	if err != nil {
		if many, ok := err.(interface{ Unwrap() []error }); ok {
			d.Errs = append(d.Errs, many.Unwrap()...)
		} else {
			d.Errs = append(d.Errs, err)
		}
		return nil
	}
	return &tc
}

func hasEntry(n *yaml.Node, key string) bool {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return true
		}
	}
	return false
}

func (d *decoder) decodeProvider(n *yaml.Node) Provider {
	var p Provider
	var nameNode, repliesNode *yaml.Node
	for _, e := range d.entries(n, "provider", providerKeys) {
		switch e.Key {
		case "name":
			nameNode = e.Value
			if s, ok := d.Str(e.Value, "provider.name"); ok {
				if !slices.Contains(providerNames, s) {
					d.Fail(e.Value, "use anthropic, openai or scripted", "unknown provider %q", s)
				} else {
					p.Name = s
				}
			}
		case "model":
			p.Model, _ = d.NonEmpty(e.Value, "provider.model")
		case "base_url":
			p.BaseURL, _ = d.NonEmpty(e.Value, "provider.base_url")
		case "max_tokens":
			p.MaxTokens, _ = d.integer(e.Value, "provider.max_tokens", 1)
		case "replies":
			repliesNode = e.Value
			p.Replies = d.decodeReplies(e.Value)
		}
	}
	if n.Kind != yaml.MappingNode {
		return p
	}
	switch {
	case nameNode == nil:
		d.Fail(n, "use anthropic, openai or scripted", "provider.name is required")
	case p.Name == "scripted":
		if repliesNode == nil || len(repliesNode.Content) == 0 {
			d.Fail(n, "list the model's turns under replies, e.g. `- text: Done.`", "the scripted provider needs replies")
		}
	case p.Name != "":
		if repliesNode != nil {
			d.Fail(repliesNode, "replies are for the scripted provider; remove them", "provider %s takes no replies", p.Name)
		}
		if p.Model == "" && !hasEntry(n, "model") {
			d.Fail(n, "name the model, e.g. `model: claude-sonnet-4-5` or `model: gpt-4.1`", "provider.model is required for %s", p.Name)
		}
	}
	return p
}

func (d *decoder) decodeReplies(n *yaml.Node) []agent.ModelResponse {
	if n.Kind != yaml.SequenceNode {
		d.Fail(n, "write one `- text: ...` or `- calls: [...]` item per model turn", "provider.replies must be a list, got %s", yamlstrict.KindName(n))
		return nil
	}
	var out []agent.ModelResponse
	for i, item := range n.Content {
		where := fmt.Sprintf("provider.replies[%d]", i)
		var r agent.ModelResponse
		for _, e := range d.entries(item, where, replyKeys) {
			switch e.Key {
			case "text":
				r.Text, _ = d.Str(e.Value, where+".text")
			case "calls":
				r.ToolCalls = d.decodeCalls(e.Value, where+".calls")
			}
		}
		if item.Kind == yaml.MappingNode && r.Text == "" && len(r.ToolCalls) == 0 && !hasEntry(item, "calls") {
			d.Fail(item, "give the turn a text, tool calls, or both", "%s is empty", where)
		}
		r.StopReason = "end_turn"
		if len(r.ToolCalls) > 0 {
			r.StopReason = "tool_use"
		}
		out = append(out, r)
	}
	return out
}

func (d *decoder) decodeCalls(n *yaml.Node, where string) []agent.ToolCall {
	if n.Kind != yaml.SequenceNode || len(n.Content) == 0 {
		d.Fail(n, "write one `- name: ... args: {...}` item per call", "%s must be a non-empty list", where)
		return nil
	}
	var out []agent.ToolCall
	for i, item := range n.Content {
		w := fmt.Sprintf("%s[%d]", where, i)
		var c agent.ToolCall
		args := warden.Args{}
		for _, e := range d.entries(item, w, callKeys) {
			switch e.Key {
			case "id":
				c.ID, _ = d.NonEmpty(e.Value, w+".id")
			case "name":
				c.Name, _ = d.NonEmpty(e.Value, w+".name")
			case "args":
				args = yamlargs.Args(&d.Decoder, e.Value, w+".args")
			}
		}
		if item.Kind == yaml.MappingNode && !hasEntry(item, "name") {
			d.Fail(item, "name the tool to call", "%s.name is required", w)
		}
		c.Args = args.AppendJSON(nil)
		out = append(out, c)
	}
	return out
}
