package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/errlines"
	"github.com/wardenhq/warden/policy"
)

// isGatewayConfig reports whether file is a gateway config rather than a policy file:
// its first YAML document is a mapping with no version key, none of a policy file's
// top-level keys, and at least one of a gateway config's. Anything else (unreadable,
// not YAML, not a mapping, a policy file with or without mistakes) is validated as a
// policy file, as it always was.
func isGatewayConfig(file string) bool {
	data, err := os.ReadFile(file)
	if err != nil {
		return false
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil || doc.Kind != yaml.DocumentNode || len(doc.Content) == 0 {
		return false
	}
	root := doc.Content[0]
	if root.Kind != yaml.MappingNode {
		return false
	}
	policyKeys, gatewayKeys := policy.TopLevelKeys(), gateway.TopLevelKeys()
	gatewayKey := false
	for i := 0; i+1 < len(root.Content); i += 2 {
		k := root.Content[i].Value
		if slices.Contains(policyKeys, k) { // version among them
			return false
		}
		gatewayKey = gatewayKey || slices.Contains(gatewayKeys, k)
	}
	return gatewayKey
}

// validateGateway checks a gateway config as warden serve does before it starts
// anything, and prints what it checked. It reports false when the config (or its
// policy) is invalid; the problems are on stderr. The error is a failure to write.
func (p *validateProgram) validateGateway(ctx context.Context, file string) (bool, error) {
	cfg, err := gateway.LoadFile(file)
	if err != nil {
		errlines.Write(p.stderr, err)
		return false, nil
	}
	// Paths in messages as the user sees them: the config as given, the policy relative
	// to the working directory (serve's messages name both absolutely).
	cfg.File, cfg.Policy = file, shownPath(cfg.Policy)
	if cfg.ShadowPolicy != "" {
		cfg.ShadowPolicy = shownPath(cfg.ShadowPolicy)
	}
	pol, cand, err := gateway.CheckPolicy(cfg)
	if err != nil {
		errlines.Write(p.stderr, err)
		return false, nil
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: ok (gateway config)\n", file)
	fmt.Fprintf(&b, "  policy %s: ok (revision %s)\n", cfg.Policy, pol.Revision())
	if sh := pol.Shadow(); sh != nil {
		fmt.Fprintf(&b, "    shadow items (enforce: false): evaluated beside it, never enforced (shadow revision %s)\n", sh.Revision())
	}
	if _, err := fmt.Fprint(p.stdout, b.String()); err != nil {
		return false, err
	}
	if err := writePolicyNotes(p.stdout, p.stderr, pol); err != nil {
		return false, err
	}
	if cand != nil {
		if _, err := fmt.Fprintf(p.stdout, "  shadow_policy %s: ok (revision %s): evaluated as a shadow beside the policy, never enforced\n", cfg.ShadowPolicy, cand.Revision()); err != nil {
			return false, err
		}
		if err := writePolicyNotes(p.stdout, p.stderr, cand); err != nil {
			return false, err
		}
	}
	b.Reset()
	fmt.Fprintf(&b, "  stdio: principal %s, role %s\n", cfg.Stdio.Principal, roleName(cfg.Stdio.Role))
	if cfg.Listen == "" {
		b.WriteString("  http: off (no listen address; serve it with warden serve --stdio)\n")
	} else {
		fmt.Fprintf(&b, "  http: %s%s, %s, %s", cfg.Listen, cfg.Path, countOf(len(cfg.Clients), "client", "clients"), countOf(len(cfg.Operators), "operator", "operators"))
		if len(cfg.Operators) > 0 {
			fmt.Fprintf(&b, ", inbox %s", cfg.UIPath)
		}
		b.WriteByte('\n')
		for _, c := range cfg.Clients {
			fmt.Fprintf(&b, "    client %s: role %s\n", c.Principal, roleName(c.Role))
		}
		if len(cfg.TrustedProxies) > 0 {
			ps := make([]string, len(cfg.TrustedProxies))
			for i, p := range cfg.TrustedProxies {
				ps[i] = p.String()
			}
			fmt.Fprintf(&b, "    trusted proxies (X-Forwarded-For and X-Forwarded-Proto read from them): %s\n", strings.Join(ps, ", "))
		}
		if o := cfg.OAuth; o != nil {
			fmt.Fprintf(&b, "    oauth: resource %s\n", o.Resource)
			for _, is := range o.Issuers {
				for _, cc := range is.Clients {
					who := cc.Client.Principal
					if who == "" {
						who = "the token's sub"
					}
					fmt.Fprintf(&b, "    oauth %s, %s %s: principal %s, role %s\n", is.Issuer, cc.Claim, cc.Value, who, roleName(cc.Client.Role))
				}
			}
		}
	}
	var warnings []string
	if len(cfg.Servers) == 0 {
		b.WriteString("  servers: none\n")
	}
	for _, s := range cfg.Servers {
		what := "url"
		if s.Transport() != "url" {
			what = "command " + s.Command
		}
		if err := cfg.Transport.Admit(ctx, s, nil); err != nil {
			fmt.Fprintf(&b, "  server %s (%s): not admitted by the transport policy\n", s.Name, what)
			warnings = append(warnings, fmt.Sprintf("%s: warning: %v; warden serve starts without it", file, err))
			continue
		}
		fmt.Fprintf(&b, "  server %s (%s): admitted by the transport policy\n", s.Name, what)
	}
	fmt.Fprintf(&b, "  store: %s (not opened)\n", shownStore(cfg.Store))
	b.WriteString("  nothing was started: warden serve discovers and pins the servers' tools\n")
	if _, err := fmt.Fprint(p.stdout, b.String()); err != nil {
		return false, err
	}
	for _, w := range warnings {
		if _, err := fmt.Fprintln(p.stderr, w); err != nil {
			return false, err
		}
	}
	return true, nil
}

func roleName(r string) string {
	if r == "" {
		return "(the policy's active role)"
	}
	return r
}

// shownPath is an absolute path from the config, relative to the working directory
// when it can be.
func shownPath(abs string) string {
	wd, err := os.Getwd()
	if err != nil {
		return abs
	}
	rel, err := filepath.Rel(wd, abs)
	if err != nil {
		return abs
	}
	return rel
}

// shownStore is the store DSN with a SQLite path shown as shownPath does and any
// other DSN's password left out.
func shownStore(dsn string) string {
	if rest, ok := strings.CutPrefix(dsn, "sqlite://"); ok && filepath.IsAbs(rest) {
		return "sqlite://" + shownPath(rest)
	}
	return redactDSN(dsn)
}
