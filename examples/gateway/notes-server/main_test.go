package main

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden/internal/mcptest"
)

func TestParseFlags(t *testing.T) {
	env := func(m map[string]string) func(string) string { return func(k string) string { return m[k] } }
	tests := []struct {
		name    string
		args    []string
		env     map[string]string
		want    string
		wantErr bool
	}{
		{"default", nil, nil, ".notes", false},
		{"NOTES_DIR", nil, map[string]string{"NOTES_DIR": "/srv/notes"}, "/srv/notes", false},
		{"flag wins", []string{"-dir", "/tmp/n"}, map[string]string{"NOTES_DIR": "/srv/notes"}, "/tmp/n", false},
		{"extra argument", []string{"-dir", "x", "y"}, nil, "", true},
		{"empty dir", []string{"-dir", ""}, nil, "", true},
		{"unknown flag", []string{"-verbose"}, nil, "", true},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var stderr strings.Builder
			cfg, err := parseFlags(tt.args, env(tt.env), &stderr)
			if (err != nil) != tt.wantErr || cfg.dir != tt.want {
				t.Errorf("parseFlags(%q) = %+v, %v; want dir %q, error %v", tt.args, cfg, err, tt.want, tt.wantErr)
			}
			if tt.wantErr && stderr.Len() == 0 {
				t.Errorf("parseFlags(%q) printed nothing", tt.args)
			}
		})
	}
}

func TestCheckName(t *testing.T) {
	for _, good := range []string{"a", "todo", "2026-01-01.md", "my_note.v2", "A-b_C.d", "x..", strings.Repeat("n", 64)} {
		if err := checkName(good); err != nil {
			t.Errorf("checkName(%q) = %v, want nil", good, err)
		}
	}
	for _, bad := range []string{"", ".", "..", ".hidden", "../etc/passwd", "a/b", `a\b`, "a b", "a\x00", "é", "C:", strings.Repeat("n", 65), ".tmp-0123"} {
		if err := checkName(bad); err == nil {
			t.Errorf("checkName(%q) = nil, want an error", bad)
		}
	}
}

// connect starts the built server on dir and returns a client session to it.
func connect(t *testing.T, bin, dir string) *mcp.ClientSession {
	t.Helper()
	client := mcp.NewClient(&mcp.Implementation{Name: "notes-test", Version: "1.0.0"}, nil)
	cs, err := client.Connect(t.Context(), &mcp.CommandTransport{Command: exec.Command(bin, "-dir", dir)}, nil)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { cs.Close() })
	return cs
}

// call calls a tool and returns its text and whether it is an error result.
func call(t *testing.T, cs *mcp.ClientSession, tool string, args map[string]any) (string, bool, *mcp.CallToolResult) {
	t.Helper()
	res, err := cs.CallTool(t.Context(), &mcp.CallToolParams{Name: tool, Arguments: args})
	if err != nil {
		t.Fatalf("%s(%v): protocol error %v", tool, args, err)
	}
	var texts []string
	for _, c := range res.Content {
		if tc, ok := c.(*mcp.TextContent); ok {
			texts = append(texts, tc.Text)
		}
	}
	return strings.Join(texts, "\n"), res.IsError, res
}

func TestNotesServer(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./examples/gateway/notes-server")
	dir := filepath.Join(t.TempDir(), "notes") // created by the server
	cs := connect(t, bin, dir)

	if got := cs.InitializeResult().ServerInfo.Name; got != "notes-server" {
		t.Errorf("server name = %q", got)
	}

	t.Run("tools", func(t *testing.T) {
		res, err := cs.ListTools(t.Context(), nil)
		if err != nil {
			t.Fatal(err)
		}
		tools := map[string]*mcp.Tool{}
		var names []string
		for _, tool := range res.Tools {
			tools[tool.Name] = tool
			names = append(names, tool.Name)
		}
		slices.Sort(names)
		if want := []string{"delete_note", "list_notes", "read_note", "search_notes", "write_note"}; !slices.Equal(names, want) {
			t.Fatalf("tools = %q, want %q", names, want)
		}
		required := map[string][]any{
			"list_notes": {}, "read_note": {"name"}, "write_note": {"name", "text"},
			"delete_note": {"name"}, "search_notes": {"query"},
		}
		for name, tool := range tools {
			if tool.Description == "" || tool.Annotations == nil {
				t.Errorf("%s: no description or annotations", name)
			}
			schema, ok := tool.InputSchema.(map[string]any)
			if !ok {
				t.Fatalf("%s: input schema %T", name, tool.InputSchema)
			}
			if schema["type"] != "object" || schema["additionalProperties"] != false {
				t.Errorf("%s: input schema %v, want an object without additional properties", name, schema)
			}
			if diff := cmp.Diff(required[name], schema["required"]); diff != "" {
				t.Errorf("%s: required (-want +got):\n%s", name, diff)
			}
			if tool.OutputSchema == nil {
				t.Errorf("%s: no output schema", name)
			}
		}
		for _, name := range []string{"list_notes", "read_note", "search_notes"} {
			if !tools[name].Annotations.ReadOnlyHint {
				t.Errorf("%s: not marked read-only", name)
			}
		}
		for _, name := range []string{"write_note", "delete_note"} {
			if a := tools[name].Annotations; a.ReadOnlyHint || a.DestructiveHint == nil || !*a.DestructiveHint {
				t.Errorf("%s: annotations %+v, want destructive and not read-only", name, a)
			}
		}
	})

	t.Run("round trip", func(t *testing.T) {
		if text, isErr, _ := call(t, cs, "list_notes", nil); isErr || text != "No notes." {
			t.Errorf("list_notes on empty dir = %q, %v", text, isErr)
		}
		if text, isErr, _ := call(t, cs, "write_note", map[string]any{"name": "groceries", "text": "milk\nEggs\nbread\n"}); isErr {
			t.Fatalf("write_note: %s", text)
		}
		if _, isErr, _ := call(t, cs, "write_note", map[string]any{"name": "todo.md", "text": "call Bob"}); isErr {
			t.Fatal("write_note todo.md failed")
		}
		text, isErr, res := call(t, cs, "read_note", map[string]any{"name": "groceries"})
		if isErr || text != "milk\nEggs\nbread\n" {
			t.Errorf("read_note = %q, %v", text, isErr)
		}
		if sc, ok := res.StructuredContent.(map[string]any); !ok || sc["text"] != "milk\nEggs\nbread\n" {
			t.Errorf("read_note structured content = %#v", res.StructuredContent)
		}
		if data, err := os.ReadFile(filepath.Join(dir, "groceries")); err != nil || string(data) != "milk\nEggs\nbread\n" {
			t.Errorf("note file = %q, %v", data, err)
		}
		if text, _, _ := call(t, cs, "list_notes", nil); text != "groceries\ntodo.md" {
			t.Errorf("list_notes = %q", text)
		}
		if text, isErr, _ := call(t, cs, "search_notes", map[string]any{"query": "EGG"}); isErr || text != "groceries: Eggs" {
			t.Errorf("search_notes(EGG) = %q, %v", text, isErr)
		}
		if text, _, _ := call(t, cs, "search_notes", map[string]any{"query": "todo"}); text != "todo.md: " {
			t.Errorf("search_notes(todo) = %q, want a name-only match", text)
		}
		if text, _, _ := call(t, cs, "search_notes", map[string]any{"query": "nothing like it"}); text != "No note matches." {
			t.Errorf("search_notes(no match) = %q", text)
		}
		if _, isErr, _ := call(t, cs, "write_note", map[string]any{"name": "groceries", "text": "replaced"}); isErr {
			t.Fatal("overwrite failed")
		}
		if text, _, _ := call(t, cs, "read_note", map[string]any{"name": "groceries"}); text != "replaced" {
			t.Errorf("read after overwrite = %q", text)
		}
		if text, isErr, _ := call(t, cs, "delete_note", map[string]any{"name": "groceries"}); isErr || text != `Deleted note "groceries".` {
			t.Errorf("delete_note = %q, %v", text, isErr)
		}
		if text, _, _ := call(t, cs, "list_notes", nil); text != "todo.md" {
			t.Errorf("list_notes after delete = %q", text)
		}
	})

	t.Run("missing note is a tool error", func(t *testing.T) {
		for _, tool := range []string{"read_note", "delete_note"} {
			text, isErr, _ := call(t, cs, tool, map[string]any{"name": "nope"})
			if !isErr || !strings.Contains(text, `note "nope" does not exist`) {
				t.Errorf("%s(nope) = %q, isError %v", tool, text, isErr)
			}
		}
	})

	t.Run("bad arguments are refused", func(t *testing.T) {
		outside := filepath.Join(filepath.Dir(dir), "escaped")
		for _, args := range []map[string]any{
			{"name": "../escaped", "text": "x"},
			{"name": ".hidden", "text": "x"},
			{"name": "a/b", "text": "x"},
			{"name": "", "text": "x"},
			{"name": strings.Repeat("n", 65), "text": "x"},
			{"name": "ok"},
			{"name": "ok", "text": "x", "extra": true},
			{"name": 3, "text": "x"},
			{"name": "big", "text": strings.Repeat("x", maxNoteBytes+1)},
		} {
			if text, isErr, _ := call(t, cs, "write_note", args); !isErr {
				t.Errorf("write_note(%.80v) = %q, want a tool error", args, text)
			}
		}
		for _, name := range []string{"../escaped", "/etc/passwd", ".."} {
			if text, isErr, _ := call(t, cs, "read_note", map[string]any{"name": name}); !isErr {
				t.Errorf("read_note(%q) = %q, want a tool error", name, text)
			}
		}
		if text, isErr, _ := call(t, cs, "search_notes", map[string]any{"query": ""}); !isErr {
			t.Errorf("search_notes(empty) = %q, want a tool error", text)
		}
		if _, err := os.Stat(outside); err == nil {
			t.Errorf("a note escaped the directory: %s exists", outside)
		}
		if text, _, _ := call(t, cs, "list_notes", nil); text != "todo.md" {
			t.Errorf("list_notes after refused writes = %q", text)
		}
	})

	t.Run("symlink out of the directory is not followed", func(t *testing.T) {
		secret := filepath.Join(t.TempDir(), "secret")
		if err := os.WriteFile(secret, []byte("top secret"), 0o600); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(secret, filepath.Join(dir, "link")); err != nil {
			t.Skipf("no symlinks: %v", err)
		}
		if text, isErr, _ := call(t, cs, "read_note", map[string]any{"name": "link"}); !isErr || strings.Contains(text, "top secret") {
			t.Errorf("read_note(link) = %q, %v; want a tool error", text, isErr)
		}
		if text, _, _ := call(t, cs, "search_notes", map[string]any{"query": "secret"}); strings.Contains(text, "top secret") {
			t.Errorf("search_notes followed the link: %q", text)
		}
	})
}

// Two server processes share one directory: concurrent whole-note writes never
// leave a mixed or partial note, and a note written by one is read by the other.
func TestNotesServerSharedDirectory(t *testing.T) {
	bin := mcptest.BuildBinary(t, "./examples/gateway/notes-server")
	dir := t.TempDir()
	a, b := connect(t, bin, dir), connect(t, bin, dir)

	texts := map[string]bool{}
	for _, who := range []string{"a", "b"} {
		for i := range 20 {
			texts[strings.Repeat(fmt.Sprintf("%s%02d ", who, i), 2000)] = true
		}
	}
	var wg sync.WaitGroup
	for _, s := range []struct {
		cs  *mcp.ClientSession
		who string
	}{{a, "a"}, {b, "b"}} {
		wg.Go(func() {
			for i := range 20 {
				text := strings.Repeat(fmt.Sprintf("%s%02d ", s.who, i), 2000)
				res, err := s.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "write_note", Arguments: map[string]any{"name": "shared", "text": text}})
				if err != nil || res.IsError {
					t.Errorf("write from %s: %v %+v", s.who, err, res)
					return
				}
				res, err = s.cs.CallTool(t.Context(), &mcp.CallToolParams{Name: "read_note", Arguments: map[string]any{"name": "shared"}})
				if err != nil || res.IsError || len(res.Content) != 1 {
					t.Errorf("read from %s: %v %+v", s.who, err, res)
					return
				}
				if got, ok := res.Content[0].(*mcp.TextContent); !ok || !texts[got.Text] {
					t.Errorf("read from %s saw a note that no one wrote whole", s.who)
					return
				}
			}
		})
	}
	wg.Wait()

	if _, isErr, _ := call(t, a, "write_note", map[string]any{"name": "from-a", "text": "hello b"}); isErr {
		t.Fatal("write from a failed")
	}
	if text, isErr, _ := call(t, b, "read_note", map[string]any{"name": "from-a"}); isErr || text != "hello b" {
		t.Errorf("b read %q, %v", text, isErr)
	}
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".tmp-") {
			t.Errorf("temporary file left behind: %s", e.Name())
		}
	}
}
