package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const gatewayFixtures = "testdata/validate/gateway/"

func TestValidateGatewayGolden(t *testing.T) {
	t.Setenv("WARDEN_TEST_VALIDATE_TOKEN", "0123456789abcdef0123")
	t.Setenv("WARDEN_TEST_VALIDATE_UNSET_TOKEN", "")
	t.Setenv("WARDEN_TEST_VALIDATE_UNSET_OPERATOR_TOKEN", "")
	tests := []struct {
		name string
		args []string
		code int
	}{
		// Servers the transport policy refuses are warnings, as serve starts without them.
		{"validate-gateway-ok", []string{"validate", gatewayFixtures + "ok.yaml"}, 0},
		{"validate-gateway-stdio-only", []string{"validate", gatewayFixtures + "stdio-only.yaml"}, 0},
		// The reverse proxies whose forwarding headers are read, as the gateway holds them.
		{"validate-gateway-proxies", []string{"validate", gatewayFixtures + "proxies.yaml"}, 0},
		{"validate-gateway-proxies-bad", []string{"validate", gatewayFixtures + "proxies-bad.yaml"}, exitUsage},
		// A gateway config and a policy file in one run: each validated as what it is.
		{"validate-gateway-and-policy", []string{"validate", gatewayFixtures + "stdio-only.yaml", codingPolicy}, 0},
		{"validate-gateway-unknown-key", []string{"validate", gatewayFixtures + "unknown-key.yaml"}, exitUsage},
		{"validate-gateway-missing-policy", []string{"validate", gatewayFixtures + "missing-policy.yaml"}, exitUsage},
		{"validate-gateway-bad-policy", []string{"validate", gatewayFixtures + "bad-policy.yaml", codingPolicy}, exitUsage},
		// The token variables serve would read are named when unset.
		{"validate-gateway-missing-token", []string{"validate", gatewayFixtures + "missing-token.yaml"}, exitUsage},
		{"validate-gateway-unknown-role", []string{"validate", gatewayFixtures + "unknown-role.yaml"}, exitUsage},
		// A candidate policy (shadow_policy) is loaded and checked with the policy.
		{"validate-gateway-shadow", []string{"validate", gatewayFixtures + "shadow.yaml"}, 0},
		{"validate-gateway-shadow-unknown-role", []string{"validate", gatewayFixtures + "shadow-unknown-role.yaml"}, exitUsage},
		// JWT access tokens of an issuer, mapped by claims; their roles are checked too.
		{"validate-gateway-oauth", []string{"validate", gatewayFixtures + "oauth.yaml"}, 0},
		{"validate-gateway-oauth-unknown-role", []string{"validate", gatewayFixtures + "oauth-unknown-role.yaml"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWarden(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			golden(t, tt.name, r.transcript(tt.args))
		})
	}
}

// The example gateway config validates without any environment: its tokens are hashes.
func TestValidateExampleGateway(t *testing.T) {
	file := filepath.Join("..", "..", "examples", "gateway", "gateway.yaml")
	r := runWarden(t, "validate", file)
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr:\n%s", r.code, r.stderr)
	}
	for _, want := range []string{
		file + ": ok (gateway config)\n",
		"  policy " + filepath.Join("..", "..", "examples", "gateway", "policy.yaml") + ": ok (revision sha256:",
		"  http: 127.0.0.1:8080/mcp, 2 clients, 1 operator, inbox /ui/\n",
		"  server notes (command go): admitted by the transport policy\n",
		"  nothing was started",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("stdout lacks %q:\n%s", want, r.stdout)
		}
	}
}

func TestIsGatewayConfig(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) string {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
		return path
	}
	gateways := []string{
		filepath.Join("..", "..", "examples", "gateway", "gateway.yaml"),
		write("policy-only.yaml", "policy: policy.yaml\n"),
		write("listen.yaml", "listen: 127.0.0.1:8080\n"),
		write("typo.yaml", "policy: p.yaml\nservres: {}\n"), // an unknown key is the gateway decoder's to report
	}
	policies := []string{
		codingPolicy, rolesPolicy,
		write("versioned.yaml", "version: 1\nservers: {}\n"), // version: a policy file
		write("mixed.yaml", "rules: {}\nservers: {}\n"),      // a policy key: a policy file
		write("list.yaml", "- policy: p.yaml\n"),             // not a mapping
		write("broken.yaml", "policy: [\n"),                  // not YAML
		write("empty.yaml", ""),                              // nothing
		write("unknown.yaml", "description_typo: x\n"),       // neither
		filepath.Join(dir, "missing.yaml"),                   // unreadable
	}
	bad, err := filepath.Glob(filepath.Join("testdata", "bad", "*.yaml"))
	if err != nil || len(bad) == 0 {
		t.Fatalf("no testdata/bad files: %v", err)
	}
	policies = append(policies, bad...)
	for _, f := range gateways {
		if !isGatewayConfig(f) {
			t.Errorf("%s: not recognised as a gateway config", f)
		}
	}
	for _, f := range policies {
		if isGatewayConfig(f) {
			t.Errorf("%s: taken for a gateway config", f)
		}
	}
}
