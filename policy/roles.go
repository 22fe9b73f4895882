package policy

import (
	"context"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/wardenhq/warden"
)

// RoleRules are the optional rules of a role policy.
type RoleRules struct {
	// Capabilities maps a role to the tool capabilities it may exercise. Configuring it
	// for ANY role makes the policy govern all four tool capabilities: a role without an
	// entry keeps whatever its allowlist gives, a role with an entry may exercise only
	// what it lists.
	Capabilities map[string][]warden.Capability
	// Skills maps a role to the skill ids it may activate. Configuring it makes the
	// policy govern skill_read; a role without an entry may activate every skill.
	//
	// A role whose entry lists at least one skill may also call [warden.ReadSkillTool]
	// (read_skill) without listing it among its tools: the skill rule is that role's
	// listing of its skills, and needs no second one. A role without an entry, or with
	// an empty one, calls read_skill only if its tools list it.
	Skills map[string][]string
}

// RolePolicy is a tool allowlist per role, with optional capability and skill rules,
// evaluated for one active role. It is a [warden.Checker] and also answers the
// synchronous [RolePolicy.IsAllowed] used to filter the tools a model is shown, so what
// the model sees and what may run come from one source.
//
// A RolePolicy is immutable and safe for concurrent use; [RolePolicy.WithActiveRole]
// returns a new one for another caller.
type RolePolicy struct {
	shared *roleSet
	active *roleState
}

// roleSet is what every view of one role policy shares.
type roleSet struct {
	roles      map[string]*roleState
	names      []string // sorted role names, for errors
	governCaps bool
	governSkil bool
	raw        map[string][]string
	rules      RoleRules
}

type roleState struct {
	name      string
	tools     []string          // allowlist in declared order
	allowed   map[string]string // tool => precomputed allow rationale
	caps      map[warden.Capability]bool
	hasCaps   bool
	skills    map[string]bool
	hasSkills bool
	// readSkill: the role's skill rule lists a skill and its tools do not list
	// read_skill, which it may call all the same (see RoleRules.Skills).
	readSkill bool

	idAllow, idMiss, idCapMiss, idSkills, idSkillsMiss, idSkillsUnruled string
}

// FromRoles builds a role policy. roles maps a role to the tools it may call (a role
// mapped to an empty list is valid and denies everything); activeRole must be one of
// them. rules may be nil. The maps are copied.
//
// It returns an error when activeRole is not in roles (the message lists the available
// roles), when rules name a role that is not in roles, or when a capability is not one
// of the four tool capabilities.
func FromRoles(roles map[string][]string, activeRole string, rules *RoleRules) (*RolePolicy, error) {
	s := &roleSet{roles: map[string]*roleState{}, raw: map[string][]string{}}
	for name, tools := range roles {
		st := &roleState{
			name:            name,
			tools:           slices.Clone(tools),
			allowed:         make(map[string]string, len(tools)),
			idAllow:         name + ".allowlist",
			idMiss:          name + ".allowlist.miss",
			idCapMiss:       name + ".capabilities.miss",
			idSkills:        name + ".skills",
			idSkillsMiss:    name + ".skills.miss",
			idSkillsUnruled: name + ".skills.unruled",
		}
		for _, t := range tools {
			st.allowed[t] = "Tool '" + t + "' is in the '" + name + "' role allowlist."
		}
		s.roles[name] = st
		s.names = append(s.names, name)
		s.raw[name] = slices.Clone(tools)
	}
	sort.Strings(s.names)
	if rules != nil {
		if len(rules.Capabilities) > 0 {
			s.governCaps = true
			s.rules.Capabilities = map[string][]warden.Capability{}
		}
		for role, caps := range rules.Capabilities {
			st, ok := s.roles[role]
			if !ok {
				return nil, fmt.Errorf("capabilities name role '%s', which is not defined in roles. Available: %s", role, s.available())
			}
			st.hasCaps = true
			st.caps = map[warden.Capability]bool{}
			for _, c := range caps {
				if !c.IsToolCapability() {
					return nil, fmt.Errorf("capabilities for role '%s': '%s' is not a tool capability (use memory_read, memory_write, external_net or user_data)", role, c)
				}
				st.caps[c] = true
			}
			s.rules.Capabilities[role] = slices.Clone(caps)
		}
		if len(rules.Skills) > 0 {
			s.governSkil = true
			s.rules.Skills = map[string][]string{}
		}
		for role, skills := range rules.Skills {
			st, ok := s.roles[role]
			if !ok {
				return nil, fmt.Errorf("skills name role '%s', which is not defined in roles. Available: %s", role, s.available())
			}
			st.hasSkills = true
			st.skills = map[string]bool{}
			for _, id := range skills {
				st.skills[id] = true
			}
			s.rules.Skills[role] = slices.Clone(skills)
			_, listed := st.allowed[warden.ReadSkillTool]
			st.readSkill = len(skills) > 0 && !listed
		}
	}
	return s.view(activeRole)
}

func (s *roleSet) available() string {
	if len(s.names) == 0 {
		return "(none)"
	}
	return strings.Join(s.names, ", ")
}

func (s *roleSet) view(role string) (*RolePolicy, error) {
	st, ok := s.roles[role]
	if !ok {
		return nil, fmt.Errorf("activeRole '%s' is not defined in roles. Available: %s", role, s.available())
	}
	return &RolePolicy{shared: s, active: st}, nil
}

// WithActiveRole returns a new policy with the same roles and rules for another active
// role. The receiver is unchanged. An unknown role is an error.
func (p *RolePolicy) WithActiveRole(role string) (*RolePolicy, error) { return p.shared.view(role) }

// ActiveRole returns the active role's name.
func (p *RolePolicy) ActiveRole() string { return p.active.name }

// Roles returns the role names, sorted.
func (p *RolePolicy) Roles() []string { return slices.Clone(p.shared.names) }

// IsAllowed reports whether the active role may call tool: its allowlist contains tool,
// or tool is read_skill and the role's skill rule lists a skill (see [RoleRules]).
// Unknown tools are not allowed. It answers exactly as [RolePolicy.Check] does for a
// tool_call request, and is the policy's [warden.VisibilityChecker] answer.
func (p *RolePolicy) IsAllowed(tool string) bool {
	_, ok := p.active.allowed[tool]
	return ok || tool == warden.ReadSkillTool && p.active.readSkill
}

// AllowedToolIDs returns a copy of the active role's allowlist in declared order, then
// read_skill when the role may call it through its skill rule without listing it.
func (p *RolePolicy) AllowedToolIDs() []string {
	out := slices.Clone(p.active.tools)
	if p.active.readSkill {
		out = append(out, warden.ReadSkillTool)
	}
	return out
}

// Governs reports whether the policy asks about c: all four tool capabilities when
// capability rules exist for any role, skill_read when skill rules exist.
func (p *RolePolicy) Governs(c warden.Capability) bool {
	if c == warden.CapSkillRead {
		return p.shared.governSkil
	}
	return c.IsToolCapability() && p.shared.governCaps
}

// Check judges a request for the active role (the request's Actor is not consulted; pick
// the role with [RolePolicy.WithActiveRole]).
//
//   - skill_read: the role's skill rule decides (no rule: allow "<r>.skills.unruled";
//     listed: allow "<r>.skills"; else deny "<r>.skills.miss").
//   - a tool capability: a role whose capability rule lacks it is denied
//     "<r>.capabilities.miss"; otherwise the allowlist decides.
//   - tool_call: listed => allow "<r>.allowlist"; read_skill, not listed, for a role
//     whose skill rule lists a skill => allow "<r>.skills"; else deny
//     "<r>.allowlist.miss".
//
// Anything else is denied.
func (p *RolePolicy) Check(_ context.Context, req warden.Request) (warden.Decision, error) {
	return p.decide(req.Capability, req.Target), nil
}

// MayExercise reports whether the active role may exercise the tool capability c: true
// when the role has no capability rule or its rule lists c. It is the role policy's
// [warden.CapabilityVisibilityChecker] answer: a tool that declares a capability the role
// may not exercise is not offered, since every call of it is refused.
func (p *RolePolicy) MayExercise(c warden.Capability) bool {
	st := p.active
	return !c.IsToolCapability() || !st.hasCaps || st.caps[c]
}

var _ warden.CapabilityVisibilityChecker = (*RolePolicy)(nil)

func (p *RolePolicy) decide(c warden.Capability, target string) warden.Decision {
	st := p.active
	switch {
	case c == warden.CapSkillRead:
		id, ok := warden.SkillIDFromTarget(target)
		if !ok {
			return warden.Decision{Effect: warden.Deny, RuleID: st.idSkillsMiss, Rationale: "skill_read request without a skill target: '" + target + "'"}
		}
		if !st.hasSkills {
			return warden.Decision{Effect: warden.Allow, RuleID: st.idSkillsUnruled, Rationale: "The '" + st.name + "' role has no skill rule."}
		}
		if st.skills[id] {
			return warden.Decision{Effect: warden.Allow, RuleID: st.idSkills, Rationale: "Skill '" + id + "' is available to the '" + st.name + "' role."}
		}
		return warden.Decision{Effect: warden.Deny, RuleID: st.idSkillsMiss, Rationale: "Skill '" + id + "' is not available to the '" + st.name + "' role."}
	case c.IsToolCapability():
		if st.hasCaps && !st.caps[c] {
			return warden.Decision{Effect: warden.Deny, RuleID: st.idCapMiss, Rationale: "The '" + st.name + "' role may not exercise '" + string(c) + "', which tool '" + target + "' declares."}
		}
	case c == warden.CapToolCall:
	default:
		return warden.Decision{Effect: warden.Deny, RuleID: st.idMiss, Rationale: "unknown capability '" + string(c) + "'"}
	}
	if why, ok := st.allowed[target]; ok {
		return warden.Decision{Effect: warden.Allow, RuleID: st.idAllow, Rationale: why}
	}
	if target == warden.ReadSkillTool && st.readSkill {
		return warden.Decision{Effect: warden.Allow, RuleID: st.idSkills, Rationale: "Tool 'read_skill' is allowed by the '" + st.name + "' role's skill rule."}
	}
	return warden.Decision{Effect: warden.Deny, RuleID: st.idMiss, Rationale: "Tool '" + target + "' is not in the '" + st.name + "' role allowlist."}
}

// Definition returns copies of the roles and rules the policy was built from.
func (p *RolePolicy) Definition() (map[string][]string, RoleRules) {
	roles := make(map[string][]string, len(p.shared.raw))
	for k, v := range p.shared.raw {
		roles[k] = slices.Clone(v)
	}
	var r RoleRules
	if p.shared.rules.Capabilities != nil {
		r.Capabilities = map[string][]warden.Capability{}
		for k, v := range p.shared.rules.Capabilities {
			r.Capabilities[k] = slices.Clone(v)
		}
	}
	if p.shared.rules.Skills != nil {
		r.Skills = map[string][]string{}
		for k, v := range p.shared.rules.Skills {
			r.Skills[k] = slices.Clone(v)
		}
	}
	return roles, r
}

func sortStrings(s []string) { sort.Strings(s) }

var _ warden.VisibilityChecker = (*RolePolicy)(nil)

// Synchronous reports true: a role policy decides in memory.
func (p *RolePolicy) Synchronous() bool { return true }
