package directives

import (
	"errors"
	"os"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/yamlstrict"
)

// maxPackSize bounds what ParsePack reads: a pack is configuration, not data.
const maxPackSize = 1 << 20

// LoadPack reads and parses a directives pack file (see [ParsePack]).
func LoadPack(path string) (*Pack, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		msg := err.Error()
		var pe *os.PathError
		if errors.As(err, &pe) {
			msg = pe.Err.Error()
		}
		return nil, &warden.ConfigError{File: path, Msg: "cannot read directives pack: " + msg, Hint: "check the path and its permissions"}
	}
	return ParsePack(path, data)
}

// ParsePack parses a directives pack; name is the file name used in errors. The format:
//
//	name: <pack name>            # optional string
//	roles:                       # required mapping, role => settings
//	  <role>:
//	    authority:     [strings] # prompt directives (each optional)
//	    boundaries:    [strings]
//	    escalations:   [strings]
//	    model:         string    # role configuration (each optional)
//	    effort:        string
//	    default_modes: [strings]
//	    modes_allow:   [strings]
//	    active:        bool
//
// Parsing is strict: an unknown or duplicate key, a value of the wrong type, an empty
// string in a list, a YAML anchor or alias, or more than one YAML document is an error.
// Every error is a *[warden.ConfigError] naming file, line and column with a hint; when
// there are several they are joined with [errors.Join]. The text is never interpreted:
// directives are not parsed into rules.
func ParsePack(name string, data []byte) (*Pack, error) {
	d := &packDecoder{yamlstrict.Decoder{
		File:          name,
		StringKeys:    true,
		ListHint:      `write a list such as ["a", "b"] or one "- item" per line; use [] for none`,
		NonBlankItems: true,
	}}
	if len(data) > maxPackSize {
		d.Fail(nil, "a directives pack is short prose; split it into several packs", "directives pack is %d bytes, over the %d-byte limit", len(data), maxPackSize)
		return nil, d.Err()
	}
	root := d.Document(data, packDoc)
	if root == nil {
		return nil, d.Err()
	}
	p := d.pack(root)
	if len(d.Errs) > 0 {
		return nil, d.Err()
	}
	return p, nil
}

// packDecoder decodes a directives pack; the schema lives here, the strict YAML reading
// in yamlstrict.
type packDecoder struct {
	yamlstrict.Decoder
}

// packDoc words the document-level errors for directives packs.
var packDoc = yamlstrict.Doc{
	Name:      "directives pack",
	Plural:    "directives packs",
	EmptyHint: "start with `name:` and a `roles:` mapping",
	MultiHint: "a directives pack holds exactly one document; remove the '---' separator and what follows, or split it into files",
}

var (
	topKeys  = []string{"name", "roles"}
	roleKeys = []string{"authority", "boundaries", "escalations", "model", "effort", "default_modes", "modes_allow", "active"}
)

func (d *packDecoder) pack(root *yaml.Node) *Pack {
	p := &Pack{Directives: map[string]RolePromptDirectives{}, Configs: map[string]RoleConfig{}}
	entries, ok := d.MappingHint(root, "the top level", "write `name: <pack>` and a `roles:` mapping")
	if !ok {
		return p
	}
	var rolesNode *yaml.Node
	for _, e := range entries {
		switch e.Key {
		case "name":
			if s, ok := d.Str(e.Value, "name"); ok {
				p.Name = s
			}
		case "roles":
			rolesNode = e.Value
		default:
			d.Fail(e.KeyNode, "allowed keys: "+strings.Join(topKeys, ", ")+yamlstrict.Suggest(e.Key, topKeys), "unknown key %q", e.Key)
		}
	}
	if rolesNode == nil {
		d.Fail(root, "add a `roles:` mapping with one entry per role", "missing roles")
		return p
	}
	roles, ok := d.MappingHint(rolesNode, "roles", "write one `<role>:` entry per role")
	if !ok {
		return p
	}
	for _, r := range roles {
		if strings.TrimSpace(r.Key) == "" {
			d.Fail(r.KeyNode, "give the role a name", "roles: a role name is empty")
			continue
		}
		dir, cfg := d.role(r.Key, r.Value)
		p.Directives[r.Key] = dir
		p.Configs[r.Key] = cfg
	}
	return p
}

func (d *packDecoder) role(name string, n *yaml.Node) (RolePromptDirectives, RoleConfig) {
	var dir RolePromptDirectives
	var cfg RoleConfig
	where := "roles." + name
	entries, ok := d.MappingHint(n, where, "write the role's settings as `key: value` lines; use `"+name+": {}` for a role with none")
	if !ok {
		return dir, cfg
	}
	for _, e := range entries {
		at := where + "." + e.Key
		switch e.Key {
		case "authority":
			dir.Authority, _ = d.StrList(e.Value, at)
		case "boundaries":
			dir.Boundaries, _ = d.StrList(e.Value, at)
		case "escalations":
			dir.Escalations, _ = d.StrList(e.Value, at)
		case "model":
			cfg.Model, _ = d.Str(e.Value, at)
		case "effort":
			cfg.Effort, _ = d.Str(e.Value, at)
		case "default_modes":
			cfg.DefaultModes, _ = d.StrList(e.Value, at)
		case "modes_allow":
			cfg.ModesAllow, _ = d.StrList(e.Value, at)
		case "active":
			if b, ok := d.Bool(e.Value, at); ok {
				cfg.Active = &b
			}
		default:
			d.Fail(e.KeyNode, "allowed keys: "+strings.Join(roleKeys, ", ")+yamlstrict.Suggest(e.Key, roleKeys), "unknown key %q in %s", e.Key, where)
		}
	}
	return dir, cfg
}
