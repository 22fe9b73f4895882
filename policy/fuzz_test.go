package policy_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// FuzzParse feeds arbitrary bytes to the policy-file loader. Beyond not panicking: a
// failure is always a located *warden.ConfigError naming the file; a success always
// has a revision, parses to the same revision again, and answers a request.
func FuzzParse(f *testing.F) {
	for _, seed := range []string{
		fullFile,
		"version: 1\npreset: safe\n",
		"version: 1\nmode: deny_all\n",
		"version: 1\nroles: {a: [x]}\nactive_role: a\n",
		"version: 1\nconditions:\n  - {id: c, when: 'tool == \"x\"', effect: halt}\n",
		"version: 1\nrules:\n  allow: {bash: ['git *']}\n  deny: {\"*\": ['*secret*']}\n",
		"version: 1\npreset: safe\n---\nversion: 1\n",
		"version: 1\nrules:\n  allow: &a {bash: [ls]}\n  escalate: *a\n",
		"version: 1\nmatch: {deploy: '{env} {service}'}\npreset: safe\n",
		"version: 1\nmatch: {'resource:*': '{uri}'}\nrules:\n  deny: {'resource:*': ['*secret*'], 'prompt:': ['*']}\n  allow: {resource:notes: ['*']}\n",
		"",
		"- a\n",
		"version: 1\nrules: [\n",
	} {
		f.Add([]byte(seed))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		p, err := policy.Parse("fuzz.yaml", data, nil)
		if err != nil {
			var ce *warden.ConfigError
			if !errors.As(err, &ce) {
				t.Fatalf("error is %T, not a ConfigError: %v", err, err)
			}
			if !strings.Contains(err.Error(), "fuzz.yaml") {
				t.Fatalf("error does not name the file: %v", err)
			}
			return
		}
		if !strings.HasPrefix(p.Revision(), "sha256:") {
			t.Fatalf("revision %q", p.Revision())
		}
		again, err := policy.Parse("fuzz.yaml", data, nil)
		if err != nil || again.Revision() != p.Revision() {
			t.Fatalf("second parse differs: %v", err)
		}
		d, _ := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "bash", Args: warden.MustParseArgs(`{"command":"ls"}`)})
		if !d.Effect.Valid() {
			t.Fatalf("invalid effect %v", d.Effect)
		}
	})
}
