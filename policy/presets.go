package policy

import "fmt"

// Preset names accepted by [PresetRules] and by policy files.
const (
	PresetReadOnly = "read_only"
	PresetSafe     = "safe"
	PresetAllowAll = "allow_all"
	PresetDenyAll  = "deny_all"
)

// PresetRules returns a fresh copy of a preset's rule configuration:
//
//   - read_only: allow reader, search, context "*", and the families "resource:*" and
//     "prompt:*" "*" (reading any MCP resource, getting any MCP prompt); deny editor,
//     bash "*".
//   - safe: allow reader, editor, search, context "*", and "resource:*", "prompt:*" "*";
//     deny bash "rm *", "sudo *", "chmod *", "kill *", "mkfs *"; escalate every other
//     bash command. Deny is checked before escalate, so a destructive command never
//     reaches a person.
//   - allow_all, deny_all: the modes of the same names.
//
// Every other tool (an MCP tool included) has no rule in read_only or safe, so it is
// denied unless rules are added.
func PresetRules(name string) (RuleConfig, error) {
	switch name {
	case PresetReadOnly:
		return RuleConfig{
			Mode:  ModeRules,
			Allow: map[string][]string{"reader": {"*"}, "search": {"*"}, "context": {"*"}, resourceFamily: {"*"}, promptFamily: {"*"}},
			Deny:  map[string][]string{"editor": {"*"}, "bash": {"*"}},
		}, nil
	case PresetSafe:
		return RuleConfig{
			Mode:     ModeRules,
			Allow:    map[string][]string{"reader": {"*"}, "editor": {"*"}, "search": {"*"}, "context": {"*"}, resourceFamily: {"*"}, promptFamily: {"*"}},
			Deny:     map[string][]string{"bash": {"rm *", "sudo *", "chmod *", "kill *", "mkfs *"}},
			Escalate: map[string][]string{"bash": {"*"}},
		}, nil
	case PresetAllowAll:
		return RuleConfig{Mode: ModeAllowAll}, nil
	case PresetDenyAll:
		return RuleConfig{Mode: ModeDenyAll}, nil
	}
	return RuleConfig{}, fmt.Errorf("unknown preset %q: use read_only, safe, allow_all or deny_all", name)
}

func mustPreset(name string) *RulePolicy {
	cfg, err := PresetRules(name)
	if err != nil {
		panic(err)
	}
	p, err := NewRules(cfg)
	if err != nil {
		panic(err)
	}
	return p
}

// ReadOnly returns the read_only preset policy.
func ReadOnly() *RulePolicy { return mustPreset(PresetReadOnly) }

// Safe returns the safe preset policy.
func Safe() *RulePolicy { return mustPreset(PresetSafe) }

// AllowAll returns a policy that allows everything, without the shell check.
func AllowAll() *RulePolicy { return mustPreset(PresetAllowAll) }

// DenyAll returns a policy that denies everything.
func DenyAll() *RulePolicy { return mustPreset(PresetDenyAll) }
