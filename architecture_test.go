package warden_test

import (
	"bufio"
	"bytes"
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// module is this module's import path; the rules below name packages relative to it.
const module = "github.com/wardenhq/warden"

// importRules is the package graph ARCHITECTURE.md describes, as an allowlist: each
// package (relative to the module; "." is the root) may import the module packages
// listed for it and nothing else of the module. A pattern ending in "/..." covers the
// package and everything below it. The first rule whose pattern matches a package is
// its rule. A package with no rule fails the test: a new package says where it stands.
var importRules = []struct {
	pkg   string
	allow []string
}{
	// The vocabulary: two std-only internal helpers (the JSON string encoder it shares
	// with the texts, and the texts only tests and the pipeline read), nothing else.
	{".", []string{"internal/jsontext", "internal/spectext"}},
	// Internal helpers: leaves, or on top of the vocabulary only.
	{"internal/fnmatch", nil},
	{"internal/seal", nil},
	{"internal/display", nil},
	{"internal/jsontext", nil},
	{"internal/fileerr", nil},
	{"internal/errlines", nil},
	{"internal/mcptest", nil},
	{"internal/otlptest", nil},
	{"internal/oidctest", nil},
	{"internal/faultserver", nil},
	{"internal/conformanceserver", []string{"internal/mcptasks"}},
	{"internal/clientaddr", nil},
	{"internal/eventstore", nil},
	{"internal/mcptasks", nil},
	{"internal/repro/stwsyscall", nil},
	{"internal/spectext", []string{"internal/jsontext"}},
	{"internal/fanout", []string{"."}},
	{"internal/yamlstrict", []string{"."}},
	{"internal/yamlargs", []string{".", "internal/yamlstrict"}},
	// Adapters of one thing each, to the vocabulary.
	{"shell", nil},
	{"schema", []string{"."}},
	{"policy", []string{".", "internal/fileerr", "internal/fnmatch", "internal/yamlstrict", "shell"}},
	{"policy/explain", []string{".", "policy"}},
	// The policy test file and its runner, on top of the policy language.
	{"policy/policytest", []string{".", "internal/fileerr", "internal/yamlargs", "internal/yamlstrict", "policy"}},
	{"directives", []string{".", "internal/yamlstrict"}},
	{"hook", []string{"."}},
	// The hook command both warden and warden-hook run: the adapter wired to the policy
	// and the audit log (package hook stays below workspace and checkpoint).
	{"hook/cli", []string{".", "audit", "hook", "internal/errlines", "policy", "policy/explain", "store", "store/postgres", "store/sqlite"}},
	{"otel", []string{"."}},
	{"otel/otlp", []string{".", "otel"}},
	{"store", []string{".", "internal/fnmatch"}},
	{"store/internal/core", []string{".", "store"}},
	{"store/storetest", []string{".", "store"}},
	{"store/sqlite/sqlitetest", []string{"store", "store/sqlite"}},
	{"store/postgres/postgrestest", []string{"store", "store/postgres"}},
	{"store/sqlite", []string{".", "store", "store/internal/core"}},
	{"store/postgres", []string{".", "store", "store/internal/core"}},
	{"audit", []string{".", "store"}},
	{"agent", []string{".", "internal/seal"}},
	{"provider/internal/...", []string{"agent", "provider/internal/..."}},
	{"provider/...", []string{"agent", "provider/internal/..."}},
	// MCP: pinning, the client side, the gateway that serves both, the web inbox
	// (which declares what it needs of the gateway instead of importing it).
	{"pin", []string{".", "internal/fanout", "store"}},
	{"upstream", []string{".", "internal/fanout", "internal/mcptasks", "internal/yamlstrict", "pin", "schema"}},
	{"inbox", []string{".", "internal/clientaddr", "internal/display", "pin", "store"}},
	// The OAuth resource server: token verification and RFC 9728 metadata, no MCP and
	// no gateway types.
	{"gateway/oauth", nil},
	{"gateway", []string{".", "audit", "gateway/oauth", "inbox", "internal/clientaddr", "internal/display", "internal/eventstore", "internal/fanout", "internal/mcptasks", "internal/yamlstrict", "pin", "policy", "schema", "store", "upstream"}},
	// warden run's parts.
	{"workspace", []string{".", "hook", "internal/fileerr", "shell"}},
	{"checkpoint", []string{".", "hook", "internal/fileerr", "internal/seal", "store"}},
	{"runfile", []string{".", "agent", "internal/fileerr", "internal/yamlargs", "internal/yamlstrict", "provider/...", "upstream"}},
	// warden demo's scenes: the real agent loop, Guard and policies with a scripted model.
	{"internal/demo", []string{".", "agent", "policy", "provider/scripted", "schema"}},
	// Programs: they wire the packages together; nothing imports them.
	{"cmd/...", []string{"..."}},
	{"examples/...", []string{".", "agent", "policy", "provider/scripted", "schema"}},
}

// sdkImporters are the only packages that may import the MCP SDK: the protocol stays
// in the MCP packages, and everything else speaks the vocabulary.
var sdkImporters = []string{"pin", "upstream", "gateway", "internal/eventstore", "internal/mcptasks", "internal/mcptest", "internal/faultserver", "internal/conformanceserver", "cmd/...", "examples/..."}

const sdkModule = "github.com/modelcontextprotocol/go-sdk"

// TestImportRules walks the module's package graph (`go list -deps`) and checks every
// import of a module package against importRules, every import of the MCP SDK against
// sdkImporters, and that the root depends on nothing outside the standard library.
func TestImportRules(t *testing.T) {
	if testing.Short() {
		t.Skip("runs go list over the whole module")
	}
	out, err := exec.Command("go", "list", "-deps", "-f", "{{.ImportPath}}|{{.Standard}}|{{join .Imports \",\"}}", module+"/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	rel := func(p string) (string, bool) {
		if p == module {
			return ".", true
		}
		r, ok := strings.CutPrefix(p, module+"/")
		return r, ok
	}
	seen := 0
	sc := bufio.NewScanner(bytes.NewReader(out))
	for sc.Scan() {
		fields := strings.SplitN(sc.Text(), "|", 3)
		if len(fields) != 3 {
			t.Fatalf("go list line %q: want path|standard|imports", sc.Text())
		}
		pkg, ok := rel(fields[0])
		if !ok {
			continue
		}
		seen++
		allow, ok := ruleFor(pkg)
		if !ok {
			t.Errorf("package %s has no import rule: add it to importRules (architecture_test.go) and to the package map in ARCHITECTURE.md", pkg)
			continue
		}
		for _, imp := range strings.Split(fields[2], ",") {
			if imp == "" {
				continue
			}
			if imp == sdkModule || strings.HasPrefix(imp, sdkModule+"/") {
				if !allowed(pkg, sdkImporters) {
					t.Errorf("%s imports the MCP SDK (%s): only %v may; speak the vocabulary instead", pkg, imp, sdkImporters)
				}
				continue
			}
			dep, inModule := rel(imp)
			if !inModule {
				continue
			}
			if !allowed(dep, allow) {
				t.Errorf("%s imports %s, which its rule does not allow (allowed: %v); see ARCHITECTURE.md for who may import whom", pkg, dep, allow)
			}
		}
	}
	if seen == 0 {
		t.Fatal("go list reported no package of the module")
	}
	// The root's whole dependency closure is the standard library and the module's own
	// std-only helpers its rule names.
	deps, err := exec.Command("go", "list", "-deps", "-f", "{{if not .Standard}}{{.ImportPath}}{{end}}", module).Output()
	if err != nil {
		t.Fatalf("go list root deps: %v", err)
	}
	for _, d := range strings.Fields(string(deps)) {
		if r, ok := rel(d); !ok || !strings.HasPrefix(r, "internal/") && r != "." {
			t.Errorf("the root package depends on %s: the vocabulary imports the standard library only", d)
		}
	}
}

// ruleFor returns the allowlist of the first rule matching pkg.
func ruleFor(pkg string) ([]string, bool) {
	for _, r := range importRules {
		if matches(r.pkg, pkg) {
			return r.allow, true
		}
	}
	return nil, false
}

// allowed reports whether dep is covered by one of the patterns.
func allowed(dep string, patterns []string) bool {
	return slices.ContainsFunc(patterns, func(p string) bool { return p == "..." || matches(p, dep) })
}

// matches reports whether pkg is pattern, or below it when pattern ends in "/...".
func matches(pattern, pkg string) bool {
	if base, ok := strings.CutSuffix(pattern, "/..."); ok {
		return pkg == base || strings.HasPrefix(pkg, base+"/")
	}
	return pattern == pkg
}
