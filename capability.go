package warden

import "strings"

// Capability names what a permission request is about. A request for [CapToolCall] asks
// whether a tool may be dispatched at all; the four tool capabilities ask whether a tool
// that declared touching memory, the network or user data may do so; [CapSkillRead] asks
// whether a skill may be activated.
type Capability string

// The capability vocabulary. [CapToolCall] and [CapSkillRead] are Warden's own words for
// "a tool was dispatched" and "a skill was activated"; a tool never declares them.
const (
	CapToolCall    Capability = "tool_call"
	CapMemoryRead  Capability = "memory_read"
	CapMemoryWrite Capability = "memory_write"
	CapExternalNet Capability = "external_net"
	CapUserData    Capability = "user_data"
	CapSkillRead   Capability = "skill_read"
)

// ToolCapabilities lists, in a fixed order, the four capabilities a tool may declare
// about itself. The function returns a new slice on every call.
func ToolCapabilities() []Capability {
	return []Capability{CapMemoryRead, CapMemoryWrite, CapExternalNet, CapUserData}
}

// IsToolCapability reports whether c is one of the four capabilities a tool may declare.
func (c Capability) IsToolCapability() bool {
	switch c {
	case CapMemoryRead, CapMemoryWrite, CapExternalNet, CapUserData:
		return true
	}
	return false
}

// Valid reports whether c is part of the capability vocabulary.
func (c Capability) Valid() bool {
	return c == CapToolCall || c == CapSkillRead || c.IsToolCapability()
}

// SkillTargetPrefix is the one spelling of a skill target: a [Request] about a skill has
// Target SkillTargetPrefix + id. A tool named like a skill never grants the skill.
const SkillTargetPrefix = "skill:"

// SkillTarget returns the request target for the skill id.
func SkillTarget(id string) string { return SkillTargetPrefix + id }

// SkillIDFromTarget returns the skill id of a skill target and true, or "" and false when
// target does not name a skill.
func SkillIDFromTarget(target string) (string, bool) {
	if !strings.HasPrefix(target, SkillTargetPrefix) {
		return "", false
	}
	return target[len(SkillTargetPrefix):], true
}
