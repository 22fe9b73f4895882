// Package spectext builds the exact texts the model reads where the reference pins them
// byte for byte (REFERENCE.md sections 1 and 2): the Guard writes them, and the root
// package's tests compare outcomes with them. It is its own package so that the root
// package exports only what users need: these builders belong to the spec, not to the
// API (a program reads an Outcome's Status, Stage and RuleID, never its text).
package spectext

import (
	"encoding/json"
	"fmt"
	"unicode/utf8"

	"github.com/wardenhq/warden/internal/jsontext"
)

// ApprovalMismatchText is what the model reads when a resumed call reaches the human
// stage with arguments other than the ones the person approved.
const ApprovalMismatchText = "approval does not apply: the arguments changed after a person approved them"

// NoPauseText is what the model reads when a middleware asks and there is no pause to
// carry the question (an MCP front without approvals, or a second ask on a resume).
func NoPauseText(middleware, question string) string {
	return "middleware '" + middleware + "' asked a person to decide, and there is no pause here to carry that ask: " + question
}

// GateDeniedText is the tool-shaped error the model reads when the session gate refuses.
func GateDeniedText(function string) string {
	b, _ := json.Marshal(struct {
		Error    string `json:"error"`
		Function string `json:"function"`
	}{"denied by governance gate", function})
	return string(b)
}

// ThrewText is the denial for a middleware hook that panicked or misbehaved.
func ThrewText(middleware string, msg string) string {
	return "middleware '" + middleware + "' threw: " + msg
}

// CeilingText is the refusal for a result over a tool's own ceiling.
func CeilingText(tool string, n, max int) string {
	return fmt.Sprintf("Result too large: %s returned %d chars, over its declared %d-char ceiling. Narrow the request and call again. No data was returned.", tool, n, max)
}

// TruncationMarker replaces an oversized result with a JSON marker that fits in max
// characters: {"truncated":true,"reason":...,"head":...}, with as much of the text's
// head as fits; the head is dropped before the reason when space is short.
func TruncationMarker(tool, text string, n, max int) string {
	reason := fmt.Sprintf("%s returned %d chars, over the %d-char cap. Narrow the request and call again.", tool, n, max)
	withReason := `{"truncated":true,"reason":` + string(jsontext.AppendString(nil, reason))
	if utf8.RuneCountInString(withReason)+len(`,"head":""}`) < max {
		room := max - utf8.RuneCountInString(withReason) - len(`,"head":""}`)
		head := make([]byte, 0, room)
		for _, r := range text {
			enc := jsontext.AppendString(nil, string(r))
			enc = enc[1 : len(enc)-1]
			if utf8.RuneCount(head)+utf8.RuneCount(enc) > room {
				break
			}
			head = append(head, enc...)
		}
		return withReason + `,"head":"` + string(head) + `"}`
	}
	if utf8.RuneCountInString(withReason)+1 <= max {
		return withReason + "}"
	}
	return `{"truncated":true}`
}
