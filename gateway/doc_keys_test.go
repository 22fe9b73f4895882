package gateway_test

import (
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/wardenhq/warden/gateway"
)

// docKeyRow is a table row of docs/gateway.md that documents a key: its first cell
// is one code span.
var docKeyRow = regexp.MustCompile("^\\|\\s*`([^`]+)`\\s*\\|")

// documentedKeys returns the keys the tables of docs/gateway.md document, each with
// the line it is on.
func documentedKeys(t *testing.T) map[string]int {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "docs", "gateway.md"))
	if err != nil {
		t.Fatal(err)
	}
	keys := map[string]int{}
	for i, line := range strings.Split(string(data), "\n") {
		m := docKeyRow.FindStringSubmatch(line)
		if m == nil {
			continue
		}
		if prev, ok := keys[m[1]]; ok {
			t.Errorf("docs/gateway.md:%d: %s is documented again (first on line %d)", i+1, m[1], prev)
		}
		keys[m[1]] = i + 1
	}
	return keys
}

// The configuration reference documents exactly the keys the decoder accepts.
func TestDocsGatewayKeys(t *testing.T) {
	known := gateway.KeyPaths()
	documented := documentedKeys(t)
	if len(documented) < 10 {
		t.Fatalf("docs/gateway.md: found only %d key rows; has the table format changed?", len(documented))
	}
	for _, k := range known {
		if _, ok := documented[k]; !ok {
			t.Errorf("the decoder accepts %s, which docs/gateway.md does not document (add a table row whose first cell is `%s`)", k, k)
		}
	}
	for k, line := range documented {
		if !slices.Contains(known, k) {
			t.Errorf("docs/gateway.md:%d documents %s, which the gateway config decoder does not accept", line, k)
		}
	}
}

// KeyPaths is what the decoder accepts: every listed key decodes (with a value of the
// right type) and a key it does not list is refused.
func TestKeyPathsMatchDecoder(t *testing.T) {
	paths := gateway.KeyPaths()
	tops := gateway.TopLevelKeys()
	for _, top := range tops {
		if !slices.ContainsFunc(paths, func(p string) bool {
			return p == top || strings.HasPrefix(p, top+".") || strings.HasPrefix(p, top+"[]")
		}) {
			t.Errorf("top-level key %s has no key path", top)
		}
	}
	dir := t.TempDir()
	for _, path := range paths {
		var doc string
		switch head, rest, _ := strings.Cut(path, "."); {
		case rest == "":
			doc = head + ": x\n"
		case head == "oauth":
			doc = flowDoc(strings.Split(path, "."))
		case head == "servers":
			doc = "servers:\n  s:\n    " + strings.TrimPrefix(rest, "<name>.") + ": x\n"
		case strings.HasSuffix(head, "[]"):
			doc = strings.TrimSuffix(head, "[]") + ":\n  - " + rest + ": x\n"
		default:
			doc = head + ":\n  " + rest + ": x\n"
		}
		// Wrong values and missing keys are errors too; only an unknown key matters here.
		_, err := gateway.ParseFile(filepath.Join(dir, "g.yaml"), []byte(doc), func(string) string { return "" })
		if err != nil && strings.Contains(err.Error(), "unknown key") {
			t.Errorf("%s: the decoder refuses it: %v", path, err)
		}
	}
	// A key outside the lists is refused in every section, so the lists are what
	// the decoder checks against.
	for _, section := range []string{"transport", "project_file", "stdio", "ui", "approvals", "limits", "audit", "metrics", "traces"} {
		file := filepath.Join(dir, section+".yaml")
		_, err := gateway.ParseFile(file, []byte("policy: p.yaml\n"+section+":\n  no_such_key: 1\n"), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), `unknown key "no_such_key"`) {
			t.Errorf("%s.no_such_key: got %v, want an unknown key error", section, err)
		}
	}
	for _, list := range []string{"clients", "operators"} {
		_, err := gateway.ParseFile(filepath.Join(dir, "g.yaml"), []byte("policy: p.yaml\n"+list+":\n  - no_such_key: 1\n"), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), `unknown key "no_such_key"`) {
			t.Errorf("%s[].no_such_key: got %v, want an unknown key error", list, err)
		}
	}
	for _, path := range []string{"oauth.no_such_key", "oauth.issuers[].no_such_key", "oauth.issuers[].clients[].no_such_key"} {
		_, err := gateway.ParseFile(filepath.Join(dir, "g.yaml"), []byte("policy: p.yaml\n"+flowDoc(strings.Split(path, "."))), func(string) string { return "" })
		if err == nil || !strings.Contains(err.Error(), `unknown key "no_such_key"`) {
			t.Errorf("%s: got %v, want an unknown key error", path, err)
		}
	}
	_, err := gateway.ParseFile(filepath.Join(dir, "g.yaml"), []byte("policy: p.yaml\nservers:\n  s:\n    command: x\n    no_such_key: 1\n"), func(string) string { return "" })
	if err == nil || !strings.Contains(err.Error(), `unknown key "no_such_key"`) {
		t.Errorf("servers.<name>.no_such_key: got %v, want an unknown key error", err)
	}
}

// flowDoc is a YAML document in flow style that sets the key path segs (a segment
// ending in [] is a list of one mapping) to x.
func flowDoc(segs []string) string { return flowPair(segs) + "\n" }

func flowPair(segs []string) string {
	name, list := strings.CutSuffix(segs[0], "[]")
	if len(segs) == 1 {
		return name + ": x"
	}
	v := "{" + flowPair(segs[1:]) + "}"
	if list {
		v = "[" + v + "]"
	}
	return name + ": " + v
}
