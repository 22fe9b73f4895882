package directives_test

import (
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/directives"
)

func TestRender_EveryCombination(t *testing.T) {
	a := []string{"Answer order questions.", "Issue refunds up to 1000."}
	b := []string{"Never promise a refund before the tool confirms it."}
	e := []string{"The customer threatens legal action.", "A refund over 1000 is requested."}
	const (
		auth = "## Authority\n- Answer order questions.\n- Issue refunds up to 1000."
		bnd  = "## Operational Boundaries\n- Never promise a refund before the tool confirms it."
		esc  = "## Escalation Conditions\nWhen any condition occurs, STOP and emit an escalation_request with the reason:\n- The customer threatens legal action.\n- A refund over 1000 is requested."
	)
	tests := []struct {
		name string
		d    directives.RolePromptDirectives
		want string
	}{
		{"none", directives.RolePromptDirectives{}, ""},
		{"empty non-nil lists", directives.RolePromptDirectives{Authority: []string{}, Boundaries: []string{}, Escalations: []string{}}, ""},
		{"authority", directives.RolePromptDirectives{Authority: a}, auth},
		{"boundaries", directives.RolePromptDirectives{Boundaries: b}, bnd},
		{"escalations", directives.RolePromptDirectives{Escalations: e}, esc},
		{"authority+boundaries", directives.RolePromptDirectives{Authority: a, Boundaries: b}, auth + "\n\n" + bnd},
		{"authority+escalations", directives.RolePromptDirectives{Authority: a, Escalations: e}, auth + "\n\n" + esc},
		{"boundaries+escalations", directives.RolePromptDirectives{Boundaries: b, Escalations: e}, bnd + "\n\n" + esc},
		{"all three", directives.RolePromptDirectives{Authority: a, Boundaries: b, Escalations: e}, auth + "\n\n" + bnd + "\n\n" + esc},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := directives.Render(tt.d); got != tt.want {
				t.Errorf("Render:\n%s\n--- want ---\n%s", got, tt.want)
			}
		})
	}
}

// The full block, written out once byte for byte, so the headings and the escalation
// sentence are pinned independently of the constants above.
func TestRender_Golden(t *testing.T) {
	d := directives.RolePromptDirectives{
		Authority:   []string{"A1"},
		Boundaries:  []string{"B1", "B2"},
		Escalations: []string{"E1"},
	}
	want := `## Authority
- A1

## Operational Boundaries
- B1
- B2

## Escalation Conditions
When any condition occurs, STOP and emit an escalation_request with the reason:
- E1`
	if got := directives.Render(d); got != want {
		t.Errorf("got\n%q\nwant\n%q", got, want)
	}
}

func TestPack_RenderMissingRole(t *testing.T) {
	p, err := directives.ParsePack("p.yaml", []byte("name: p\nroles:\n  support:\n    authority: [x]\n  empty: {}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if got := p.Render("support"); got != "## Authority\n- x" {
		t.Errorf("support: %q", got)
	}
	for _, role := range []string{"phantom", "", "empty"} {
		if got := p.Render(role); got != "" {
			t.Errorf("Render(%q) = %q, want empty", role, got)
		}
	}
	if _, ok := p.PromptDirectives("phantom"); ok {
		t.Error("PromptDirectives reports a role the pack does not define")
	}
	if _, ok := p.PromptDirectives("empty"); !ok {
		t.Error("a role with no directives is still defined")
	}
	var nilPack *directives.Pack
	if got := nilPack.Render("support"); got != "" {
		t.Errorf("nil pack renders %q", got)
	}
}

func TestParsePack_Full(t *testing.T) {
	src := `name: support-pack
roles:
  support:
    authority: ["Answer questions."]
    boundaries:
      - "Never share data."
    escalations: [Legal threats.]
    model: claude-sonnet-4-5
    effort: medium
    default_modes: [chat]
    modes_allow: [chat, email]
    active: true
  viewer:
    active: false
  bare: {}
`
	p, err := directives.ParsePack("pack.yaml", []byte(src))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "support-pack" {
		t.Errorf("name %q", p.Name)
	}
	wantDir := map[string]directives.RolePromptDirectives{
		"support": {Authority: []string{"Answer questions."}, Boundaries: []string{"Never share data."}, Escalations: []string{"Legal threats."}},
		"viewer":  {},
		"bare":    {},
	}
	if !reflect.DeepEqual(p.Directives, wantDir) {
		t.Errorf("directives %#v", p.Directives)
	}
	yes, no := true, false
	wantCfg := map[string]directives.RoleConfig{
		"support": {Model: "claude-sonnet-4-5", Effort: "medium", DefaultModes: []string{"chat"}, ModesAllow: []string{"chat", "email"}, Active: &yes},
		"viewer":  {Active: &no},
		"bare":    {},
	}
	if !reflect.DeepEqual(p.Configs, wantCfg) {
		t.Errorf("configs %#v", p.Configs)
	}
	if got := p.Roles(); !reflect.DeepEqual(got, []string{"bare", "support", "viewer"}) {
		t.Errorf("roles %v", got)
	}
}

func TestParsePack_StrictErrors(t *testing.T) {
	tests := []struct {
		name      string
		src       string
		line, col int
		msg       string
	}{
		{"empty file", "", 1, 1, "directives pack is empty"},
		{"comment only", "# nothing\n", 0, 0, "directives pack is empty"},
		{"top level list", "- a\n", 1, 1, "the top level must be a mapping, got a list"},
		{"unknown top key", "name: p\nrole:\n  a: {}\n", 2, 1, `unknown key "role"`},
		{"missing roles", "name: p\n", 1, 1, "missing roles"},
		{"name not a string", "name: [p]\nroles: {}\n", 1, 7, "name must be a string, got a list"},
		{"roles not a mapping", "roles: [a, b]\n", 1, 8, "roles must be a mapping, got a list"},
		{"role not a mapping", "roles:\n  support: true\n", 2, 12, "roles.support must be a mapping, got a boolean"},
		{"role null", "roles:\n  support:\n", 2, 11, "roles.support must be a mapping, got null"},
		{"unknown role key", "roles:\n  support:\n    authorty: [x]\n", 3, 5, `unknown key "authorty" in roles.support`},
		{"duplicate role", "roles:\n  a: {}\n  a: {}\n", 3, 3, `duplicate key "a" in roles`},
		{"duplicate role key", "roles:\n  a:\n    model: x\n    model: y\n", 4, 5, `duplicate key "model" in roles.a`},
		{"duplicate top key", "name: a\nname: b\nroles: {}\n", 2, 1, `duplicate key "name" in the top level`},
		{"authority not a list", "roles:\n  a:\n    authority: do things\n", 3, 16, "roles.a.authority must be a list of strings, got a string"},
		{"authority item a number", "roles:\n  a:\n    authority: [1]\n", 3, 17, "roles.a.authority[0] must be a string, got a number"},
		{"authority item a mapping", "roles:\n  a:\n    boundaries:\n      - {x: y}\n", 4, 9, "roles.a.boundaries[0] must be a string, got a mapping"},
		{"empty item", "roles:\n  a:\n    escalations: [\"\"]\n", 3, 19, "roles.a.escalations[0] is empty"},
		{"model not a string", "roles:\n  a:\n    model: 4\n", 3, 12, "roles.a.model must be a string, got a number"},
		{"effort not a string", "roles:\n  a:\n    effort: [high]\n", 3, 13, "roles.a.effort must be a string, got a list"},
		{"active not a bool", "roles:\n  a:\n    active: \"yes\"\n", 3, 13, "roles.a.active must be true or false, got a string"},
		{"modes not a list", "roles:\n  a:\n    modes_allow: chat\n", 3, 18, "roles.a.modes_allow must be a list of strings, got a string"},
		{"default modes item", "roles:\n  a:\n    default_modes: [true]\n", 3, 21, "roles.a.default_modes[0] must be a string, got a boolean"},
		{"two documents", "roles: {}\n---\nroles: {}\n", 3, 1, "more than one YAML document"},
		{"anchor", "roles:\n  a: &x {}\n  b: *x\n", 2, 6, "anchors and aliases are not allowed"},
		{"bad yaml", "roles:\n\ta: {}\n", 2, 1, "invalid YAML"},
		{"non-string key", "roles:\n  1: {}\n", 2, 3, "roles: keys must be strings, got a number"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p, err := directives.ParsePack("pack.yaml", []byte(tt.src))
			if err == nil {
				t.Fatalf("no error; pack %+v", p)
			}
			if p != nil {
				t.Error("a pack with errors was returned")
			}
			var ce *warden.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error %T %v is not a *warden.ConfigError", err, err)
			}
			if ce.File != "pack.yaml" || !strings.Contains(ce.Msg, tt.msg) || ce.Hint == "" {
				t.Errorf("got %v (hint %q), want %q with a hint", ce, ce.Hint, tt.msg)
			}
			if tt.line != 0 && (ce.Line != tt.line || ce.Column != tt.col) {
				t.Errorf("located at %d:%d, want %d:%d (%v)", ce.Line, ce.Column, tt.line, tt.col, ce)
			}
			if tt.line != 0 && !strings.HasPrefix(err.Error(), "pack.yaml:") {
				t.Errorf("error %q does not start with the file", err)
			}
		})
	}
}

func TestParsePack_ReportsEveryError(t *testing.T) {
	src := "roles:\n  a:\n    model: 1\n    wat: x\n  b:\n    active: maybe\n"
	_, err := directives.ParsePack("pack.yaml", []byte(src))
	if err == nil {
		t.Fatal("no error")
	}
	var n int
	for _, e := range err.(interface{ Unwrap() []error }).Unwrap() {
		var ce *warden.ConfigError
		if !errors.As(e, &ce) {
			t.Errorf("%T is not a ConfigError", e)
		}
		n++
	}
	if n != 3 {
		t.Errorf("%d errors, want 3: %v", n, err)
	}
}

func TestParsePack_Suggests(t *testing.T) {
	_, err := directives.ParsePack("p.yaml", []byte("roles:\n  a:\n    escalation: [x]\n"))
	if err == nil || !strings.Contains(err.Error(), `did you mean "escalations"?`) {
		t.Errorf("got %v", err)
	}
}

func TestLoadPack(t *testing.T) {
	dir := t.TempDir()
	path := filepath.Join(dir, "p.yaml")
	if err := os.WriteFile(path, []byte("name: p\nroles:\n  a:\n    authority: [x]\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	p, err := directives.LoadPack(path)
	if err != nil {
		t.Fatal(err)
	}
	if p.Render("a") != "## Authority\n- x" {
		t.Errorf("render %q", p.Render("a"))
	}
	_, err = directives.LoadPack(filepath.Join(dir, "missing.yaml"))
	var ce *warden.ConfigError
	if !errors.As(err, &ce) || !strings.Contains(ce.Msg, "cannot read directives pack") {
		t.Errorf("missing file: %v", err)
	}
}

func TestExamplePack(t *testing.T) {
	p, err := directives.LoadPack("../examples/directives/support-pack.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "support-pack" {
		t.Errorf("name %q", p.Name)
	}
	got := p.Render("support")
	want := `## Authority
- Answer customer questions about orders, shipping and refunds.
- Issue refunds up to 1000 when the order record supports it.

## Operational Boundaries
- Never promise a refund before the refund tool confirms it.
- Never share one customer's data with another customer.

## Escalation Conditions
When any condition occurs, STOP and emit an escalation_request with the reason:
- The customer threatens legal action or mentions a regulator.
- A refund over 1000 is requested.
- You are asked to export or delete customer records.`
	if got != want {
		t.Errorf("support renders\n%s", got)
	}
	if got := p.Render("viewer"); strings.Contains(got, "Escalation") {
		t.Errorf("viewer has no escalations, got\n%s", got)
	}
	if c := p.Configs["admin"]; c.Active == nil || *c.Active || c.Effort != "high" {
		t.Errorf("admin config %+v", c)
	}
}

func TestCatalog(t *testing.T) {
	yes := true
	p := &directives.Pack{
		Name: "support-pack",
		Directives: map[string]directives.RolePromptDirectives{
			"support": {Authority: []string{"A"}, Escalations: []string{"E"}},
			"viewer":  {},
		},
		Configs: map[string]directives.RoleConfig{
			"support": {Model: "m", Effort: "low", DefaultModes: []string{"chat"}, ModesAllow: []string{"chat", "email"}, Active: &yes},
		},
	}
	b, err := directives.Catalog(p)
	if err != nil {
		t.Fatal(err)
	}
	want := `{
  "name": "support-pack",
  "kind": "prompt_directives",
  "note": "Prompt directives are guidance for the model. They are not enforced; the policy decides what may run.",
  "roles": {
    "support": {
      "directives": {
        "enforcing": false,
        "authority": [
          "A"
        ],
        "boundaries": [],
        "escalations": [
          "E"
        ],
        "rendered": "## Authority\n- A\n\n## Escalation Conditions\nWhen any condition occurs, STOP and emit an escalation_request with the reason:\n- E"
      },
      "model": "m",
      "effort": "low",
      "default_modes": [
        "chat"
      ],
      "modes_allow": [
        "chat",
        "email"
      ],
      "active": true
    },
    "viewer": {
      "directives": {
        "enforcing": false,
        "authority": [],
        "boundaries": [],
        "escalations": [],
        "rendered": ""
      }
    }
  }
}`
	if string(b) != want {
		t.Errorf("catalog:\n%s", b)
	}
	if strings.Contains(strings.ToLower(string(b)), "permission") {
		t.Error("the catalog calls directives permissions")
	}
	// Every role's directives carry enforcing:false, decoded generically.
	var doc struct {
		Roles map[string]struct {
			Directives map[string]any `json:"directives"`
		} `json:"roles"`
	}
	if err := json.Unmarshal(b, &doc); err != nil {
		t.Fatal(err)
	}
	for role, r := range doc.Roles {
		if v, ok := r.Directives["enforcing"]; !ok || v != false {
			t.Errorf("role %s: enforcing = %v (present %v)", role, v, ok)
		}
	}
}

func TestCatalog_NilAndEmpty(t *testing.T) {
	for _, p := range []*directives.Pack{nil, {}} {
		b, err := directives.Catalog(p)
		if err != nil {
			t.Fatal(err)
		}
		var doc map[string]any
		if err := json.Unmarshal(b, &doc); err != nil {
			t.Fatal(err)
		}
		if r, ok := doc["roles"].(map[string]any); !ok || len(r) != 0 {
			t.Errorf("roles = %v", doc["roles"])
		}
	}
}
