package gateway

import (
	"slices"

	"github.com/wardenhq/warden/policy"
)

// TopLevelKeys returns the keys a gateway config may have at its top level (a new
// slice each call). warden validate uses it to tell a gateway config from a policy file.
func TopLevelKeys() []string { return slices.Clone(topKeys) }

// CheckPolicy loads the policy file cfg names and checks that every role cfg gives a
// client or the stdio front exists in it: what [Gateway.Start] and [Gateway.Reload]
// check before anything is started. It starts nothing and opens no connection.
func CheckPolicy(cfg *File) (*policy.Policy, error) {
	pol, err := policy.LoadFile(cfg.Policy, nil)
	if err != nil {
		return nil, err
	}
	if _, err := policyViews(pol, cfg); err != nil {
		return nil, err
	}
	return pol, nil
}
