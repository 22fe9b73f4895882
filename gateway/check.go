package gateway

import (
	"slices"

	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/upstream"
)

// TopLevelKeys returns the keys a gateway config may have at its top level (a new
// slice each call). warden validate uses it to tell a gateway config from a policy file.
func TopLevelKeys() []string { return slices.Clone(topKeys) }

// CheckPolicy loads the policy file cfg names, and its shadow_policy when it names
// one, and checks that every role cfg gives a client or the stdio front exists in them
// (in the shadow policy, when it defines roles): what [Gateway.Start] and
// [Gateway.Reload] check before anything is started. It starts nothing and opens no
// connection. It returns the enforcing policy and the candidate (nil for none).
func CheckPolicy(cfg *File) (pol, shadow *policy.Policy, err error) {
	pol, cand, err := loadPolicies(cfg)
	if err != nil {
		return nil, nil, err
	}
	views, err := policyViews(pol, cfg)
	if err != nil {
		return nil, nil, err
	}
	if _, err := candidateViews(cand, views, cfg); err != nil {
		return nil, nil, err
	}
	return pol, cand, nil
}

// KeyPaths returns every key a gateway config accepts, as the configuration
// reference (docs/gateway.md) names them: a top-level scalar by its name ("listen"),
// a key in a section as section.key ("limits.call_timeout"), in a server's entry as
// servers.<name>.key, and in an entry of a list as list[].key ("clients[].role").
// The stdio identity takes no token, so its token keys are left out. They are read
// from the decoder's own key lists, in the order of those lists.
func KeyPaths() []string {
	sections := map[string][]string{
		"transport":    upstream.TransportKeys(),
		"servers":      upstream.ServerKeys(),
		"project_file": projectFileKeys,
		"stdio":        slices.DeleteFunc(slices.Clone(clientKeys), func(k string) bool { return k == "token_env" || k == "token_sha256" }),
		"clients":      clientKeys,
		"operators":    operatorKeys,
		"ui":           uiKeys,
		"approvals":    approvalsKeys,
		"limits":       limitsKeys,
		"audit":        auditKeys,
		"metrics":      metricsKeys,
		"traces":       tracesKeys,
	}
	var out []string
	for _, top := range topKeys {
		if top == "oauth" {
			out = append(out, oauthKeyPaths()...)
			continue
		}
		keys, ok := sections[top]
		if !ok {
			out = append(out, top)
			continue
		}
		prefix := top + "."
		switch top {
		case "servers":
			prefix = "servers.<name>."
		case "clients", "operators":
			prefix = top + "[]."
		}
		for _, k := range keys {
			out = append(out, prefix+k)
		}
	}
	return out
}
