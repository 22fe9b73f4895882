// This file holds how a [CallFilter] selects calls. Tool names are matched with the
// policy's glob dialect (internal/fnmatch), so a pattern a person writes means the same
// in `warden audit --tool`, in the inbox and in a policy file.

package store

import (
	"fmt"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/wardenhq/warden/internal/fnmatch"
)

// CallMatcher is a compiled [CallFilter]: it reports whether a call passes every
// condition of the filter but Limit. Build one per query with [CallFilter.Matcher], so
// the tool glob is compiled once and not for every row. It is immutable and safe for
// concurrent use.
type CallMatcher struct {
	f     CallFilter
	since time.Time
	glob  fnmatch.Pattern
}

// Matcher compiles f. Every filter compiles: every ToolGlob is a pattern (see
// [CallFilter.ToolGlob]).
func (f CallFilter) Matcher() *CallMatcher {
	m := &CallMatcher{f: f, since: NormalizeTime(f.Since)}
	if f.ToolGlob != "" {
		m.glob = fnmatch.Compile(f.ToolGlob)
	}
	return m
}

// Match reports whether r passes every condition of the filter (Limit aside).
func (m *CallMatcher) Match(r CallRecord) bool {
	f := &m.f
	if !m.since.IsZero() && r.Time.Before(m.since) {
		return false
	}
	if f.Principal != "" && r.Identity.Principal != f.Principal {
		return false
	}
	if f.CallID != "" && r.CallID != f.CallID {
		return false
	}
	if f.Status != "" && r.Status != f.Status {
		return false
	}
	if f.ToolGlob != "" && !m.glob.Match(r.Tool) {
		return false
	}
	if f.Shadow && len(r.Shadow) == 0 {
		return false
	}
	return true
}

// CheckToolGlob reports, as an error a person can act on, a tool glob that is valid
// but almost certainly not what its writer meant: one with a '[' that no ']' closes
// (the dialect reads it as a literal '[', so "mcp__[ab*" matches only names that start
// with "mcp__[ab"), and one that can match no stored tool name because it holds invalid
// UTF-8 or a NUL character (stores keep names as clean text). Policies accept such
// patterns and `warden lint` warns about the first kind; a query filter cannot warn, so
// front ends refuse them with this check instead. nil means the pattern is fine.
func CheckToolGlob(pattern string) error {
	switch {
	case !utf8.ValidString(pattern):
		return fmt.Errorf("tool pattern %q is not valid UTF-8, so it matches no tool name", pattern)
	case strings.ContainsRune(pattern, 0):
		return fmt.Errorf("tool pattern %q contains a NUL character, so it matches no tool name", pattern)
	case fnmatch.HasLiteralBracket(pattern):
		return fmt.Errorf("tool pattern %q has a '[' that no ']' closes: close the class, or write '[[]' for a literal '['", pattern)
	}
	return nil
}
