package directives

import (
	"encoding/json"
	"sort"
	"strings"
)

// RolePromptDirectives is the prompt guidance for one role: what it may decide on its
// own (Authority), what it must not do (Boundaries), and when it should stop and ask for
// a person (Escalations). Each entry is one line of model-facing text.
//
// It is model guidance, not enforcement: nothing here is parsed into a rule, grants or
// refuses a tool call, or installs an escalation handler. The policy enforces.
type RolePromptDirectives struct {
	Authority   []string `json:"authority"`
	Boundaries  []string `json:"boundaries"`
	Escalations []string `json:"escalations"`
}

// RolePolicy is the former name of [RolePromptDirectives]. It is an alias, not a new
// type: values of either name are interchangeable without conversion.
//
// Deprecated: use [RolePromptDirectives]. The old name suggested enforcement; prompt
// directives are model guidance and enforce nothing.
type RolePolicy = RolePromptDirectives

// RoleConfig is the non-prompt configuration a pack may give a role: which model and
// effort to run it with and which modes it starts in and may use. Warden passes these
// through to whoever builds the agent; none of them is a permission either.
type RoleConfig struct {
	// Model names the model to run the role with; "" leaves the choice to the caller.
	Model string `json:"model,omitempty"`
	// Effort is a provider-specific effort or reasoning level; "" means the default.
	Effort string `json:"effort,omitempty"`
	// DefaultModes are the modes the role starts in.
	DefaultModes []string `json:"default_modes,omitempty"`
	// ModesAllow are the modes the role may switch to.
	ModesAllow []string `json:"modes_allow,omitempty"`
	// Active says whether the role is in use; nil means the pack did not say.
	Active *bool `json:"active,omitempty"`
}

// Pack is a named set of roles with their prompt directives and configuration. Every
// role of the pack has an entry in both maps (possibly zero).
//
// A Pack is plain data. Treat a loaded pack as read-only when several goroutines use it.
type Pack struct {
	// Name is the pack's name (the YAML `name` key), or "" when the file gave none.
	Name string
	// Directives maps a role to its prompt directives.
	Directives map[string]RolePromptDirectives
	// Configs maps a role to its configuration.
	Configs map[string]RoleConfig
}

// PromptDirectives returns a role's prompt directives and whether the pack defines the
// role. A nil pack defines no role.
func (p *Pack) PromptDirectives(role string) (RolePromptDirectives, bool) {
	if p == nil {
		return RolePromptDirectives{}, false
	}
	d, ok := p.Directives[role]
	return d, ok
}

// Policies returns the pack's directives map (the same map as [Pack.Directives]).
//
// Deprecated: use the Directives field or [Pack.PromptDirectives]. Directives are model
// guidance, not policies.
func (p *Pack) Policies() map[string]RolePolicy {
	if p == nil {
		return nil
	}
	return p.Directives
}

// Policy returns a role's directives, like [Pack.PromptDirectives].
//
// Deprecated: use [Pack.PromptDirectives]. Directives are model guidance, not policies.
func (p *Pack) Policy(role string) (RolePolicy, bool) { return p.PromptDirectives(role) }

// Roles returns the pack's role names, sorted.
func (p *Pack) Roles() []string {
	if p == nil {
		return nil
	}
	out := make([]string, 0, len(p.Directives))
	for r := range p.Directives {
		out = append(out, r)
	}
	sort.Strings(out)
	return out
}

// Render renders a role's directives (see [Render]). A role the pack does not define
// renders as "".
func (p *Pack) Render(role string) string {
	d, ok := p.PromptDirectives(role)
	if !ok {
		return ""
	}
	return Render(d)
}

// The exact headings and sentence of a rendered block.
const (
	AuthorityHeading   = "## Authority"
	BoundariesHeading  = "## Operational Boundaries"
	EscalationsHeading = "## Escalation Conditions"
	EscalationsLead    = "When any condition occurs, STOP and emit an escalation_request with the reason:"
)

// Render returns the prompt block for d, exactly:
//
//	## Authority
//	- <text>
//
//	## Operational Boundaries
//	- <text>
//
//	## Escalation Conditions
//	When any condition occurs, STOP and emit an escalation_request with the reason:
//	- <text>
//
// Lines are joined by "\n" with no trailing newline; one blank line separates the
// sections that are emitted; a section whose list is empty is left out; and when every
// list is empty the result is "". Entries are written as they are.
//
// The escalation sentence instructs the model; it installs no handler and the text is
// never parsed back into a rule.
func Render(d RolePromptDirectives) string {
	var sections []string
	section := func(heading, lead string, items []string) {
		if len(items) == 0 {
			return
		}
		lines := make([]string, 0, len(items)+2)
		lines = append(lines, heading)
		if lead != "" {
			lines = append(lines, lead)
		}
		for _, it := range items {
			lines = append(lines, "- "+it)
		}
		sections = append(sections, strings.Join(lines, "\n"))
	}
	section(AuthorityHeading, "", d.Authority)
	section(BoundariesHeading, "", d.Boundaries)
	section(EscalationsHeading, EscalationsLead, d.Escalations)
	return strings.Join(sections, "\n\n")
}

// catalogFile is the JSON shape of [Catalog].
type catalogFile struct {
	Name  string                 `json:"name"`
	Kind  string                 `json:"kind"`
	Note  string                 `json:"note"`
	Roles map[string]catalogRole `json:"roles"`
}

type catalogRole struct {
	Directives   catalogDirectives `json:"directives"`
	Model        string            `json:"model,omitempty"`
	Effort       string            `json:"effort,omitempty"`
	DefaultModes []string          `json:"default_modes,omitempty"`
	ModesAllow   []string          `json:"modes_allow,omitempty"`
	Active       *bool             `json:"active,omitempty"`
}

type catalogDirectives struct {
	Enforcing   bool     `json:"enforcing"`
	Authority   []string `json:"authority"`
	Boundaries  []string `json:"boundaries"`
	Escalations []string `json:"escalations"`
	Rendered    string   `json:"rendered"`
}

// CatalogKind is the "kind" of a [Catalog] document.
const CatalogKind = "prompt_directives"

// CatalogNote is the "note" of a [Catalog] document.
const CatalogNote = "Prompt directives are guidance for the model. They are not enforced; the policy decides what may run."

// Catalog describes a pack as indented JSON:
//
//	{
//	  "name": "<pack>",
//	  "kind": "prompt_directives",
//	  "note": "Prompt directives are guidance for the model. ...",
//	  "roles": {
//	    "<role>": {
//	      "directives": {
//	        "enforcing": false,
//	        "authority": [...], "boundaries": [...], "escalations": [...],
//	        "rendered": "<Render output>"
//	      },
//	      "model": ..., "effort": ..., "default_modes": [...], "modes_allow": [...], "active": ...
//	    }
//	  }
//	}
//
// Roles are keyed by name (sorted), lists are never null, empty configuration fields are
// left out, and "enforcing" is always false: directives are guidance, never rules. A nil
// pack is described as an unnamed pack with no roles.
func Catalog(pack *Pack) ([]byte, error) {
	c := catalogFile{Kind: CatalogKind, Note: CatalogNote, Roles: map[string]catalogRole{}}
	if pack != nil {
		c.Name = pack.Name
		for _, role := range pack.Roles() {
			d := pack.Directives[role]
			cfg := pack.Configs[role]
			c.Roles[role] = catalogRole{
				Directives: catalogDirectives{
					Authority:   nonNil(d.Authority),
					Boundaries:  nonNil(d.Boundaries),
					Escalations: nonNil(d.Escalations),
					Rendered:    Render(d),
				},
				Model:        cfg.Model,
				Effort:       cfg.Effort,
				DefaultModes: cfg.DefaultModes,
				ModesAllow:   cfg.ModesAllow,
				Active:       cfg.Active,
			}
		}
	}
	return json.MarshalIndent(c, "", "  ")
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}
