package inbox_test

// attack3: the audit page's tool filter reads what a person typed in the policy glob
// dialect, where '[' opens a class. A '[' that no ']' closes is read as a literal '[',
// so "mcp__github__[lis*" silently matches nothing and the page reports "No calls
// match" for calls that happened. The store says front ends check such a pattern with
// store.CheckToolGlob first (warden audit --tool refuses it); the inbox must say why
// and not filter by it, the way it treats an unknown status.

import (
	"net/http"
	"net/url"
	"strings"
	"testing"
)

func TestAttack3AuditToolGlobIsChecked(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	seedCalls(t, f.st)
	c, _ := f.signedIn()
	for _, pattern := range []string{"mcp__github__[lis*", "fs_[*", "de\x00ploy"} {
		resp, body := f.get(c, "/ui/audit?tool="+url.QueryEscape(pattern))
		if resp.StatusCode != http.StatusOK {
			t.Fatalf("%q: status %d", pattern, resp.StatusCode)
		}
		if got := len(rowTools(body)); got != 5 {
			t.Errorf("%q: %d rows, want all 5 (a pattern that cannot mean what was typed does not filter)", pattern, got)
		}
		if !strings.Contains(body, "Tool:") || !strings.Contains(body, "Not filtered by tool") {
			t.Errorf("%q: the page does not explain why the tool filter was not applied", pattern)
		}
	}
}
