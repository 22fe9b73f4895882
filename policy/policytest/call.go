package policytest

// This file is the call a case decides, and what makes one askable; `warden check`
// checks its flags with the same rules.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/wardenhq/warden"
)

// Call is one call to decide against a policy, as a test case (or `warden check`'s
// flags) gives it.
type Call struct {
	Tool string
	Args warden.Args
	// Role is the active role; "" means the policy's active_role.
	Role string
	// Capabilities are what the tool declares, in order, without repeats.
	Capabilities []warden.Capability
}

// Validate refuses calls that cannot be asked: no tool name, an empty skill id, or
// capabilities on a skill activation (a skill declares none).
func (c Call) Validate() error {
	if strings.TrimSpace(c.Tool) == "" {
		return fmt.Errorf("the tool name is empty")
	}
	if id, ok := warden.SkillIDFromTarget(c.Tool); ok {
		if strings.TrimSpace(id) == "" {
			return fmt.Errorf("%q names no skill; write skill:<id>", c.Tool)
		}
		if len(c.Capabilities) > 0 {
			return fmt.Errorf("%q is a skill activation (checked as skill_read); it declares no capabilities", c.Tool)
		}
	}
	return nil
}

// ParseCapabilities parses the capabilities a tool declares. Only the four tool
// capabilities are accepted; repeats are dropped (a tool declares a capability once).
func ParseCapabilities(names []string) ([]warden.Capability, error) {
	var out []warden.Capability
	for _, n := range names {
		if msg, hint := CapabilityProblem(n); msg != "" {
			return nil, fmt.Errorf("%s; %s", msg, hint)
		}
		if c := warden.Capability(n); !slices.Contains(out, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

// CapabilityProblem says what is wrong with a capability a tool is said to declare, and
// how to fix it; both are "" for the four tool capabilities.
func CapabilityProblem(name string) (msg, hint string) {
	switch c := warden.Capability(name); {
	case c == warden.CapToolCall:
		return "tool_call is always checked", "list only what the tool declares: memory_read, memory_write, external_net or user_data"
	case c == warden.CapSkillRead:
		return "skill_read is not a tool capability", "to check a skill activation, use the tool name skill:<id>"
	case !c.IsToolCapability():
		return fmt.Sprintf("unknown capability %q", name), "use memory_read, memory_write, external_net or user_data"
	}
	return "", ""
}
