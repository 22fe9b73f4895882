package pin

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

func TestDefinitionHashCanonical(t *testing.T) {
	t.Parallel()
	a := &mcp.Tool{
		Name:        "read",
		Description: "Reads <a> file & more.",
		InputSchema: json.RawMessage(`{"type":"object","properties":{"path":{"type":"string","minLength":1},"n":{"type":"integer"}},"required":["path"]}`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
	}
	b := &mcp.Tool{
		Name:        "read",
		Description: "Reads <a> file & more.",
		InputSchema: json.RawMessage(`{ "required": ["path"],
			"properties": {"n": {"type": "integer"}, "path": {"minLength": 1, "type": "string"}},
			"type": "object" }`),
		Annotations: &mcp.ToolAnnotations{ReadOnlyHint: true},
		Meta:        mcp.Meta{"requestTime": "volatile"},
	}
	ha, ca, err := Hash(a)
	if err != nil {
		t.Fatal(err)
	}
	hb, cb, err := Hash(b)
	if err != nil {
		t.Fatal(err)
	}
	if ha != hb || string(ca) != string(cb) {
		t.Fatalf("reordered keys or _meta changed the hash:\n%s %s\n%s %s", ha, ca, hb, cb)
	}
	if !strings.HasPrefix(ha, "sha256:") || len(ha) != len("sha256:")+64 {
		t.Errorf("hash %q", ha)
	}
	const want = `{"annotations":{"readOnlyHint":true},"description":"Reads <a> file & more.","inputSchema":{"properties":{"n":{"type":"integer"},"path":{"minLength":1,"type":"string"}},"required":["path"],"type":"object"},"name":"read"}`
	if string(ca) != want {
		t.Errorf("canonical\n got %s\nwant %s", ca, want)
	}

	// Every part of the definition counts.
	for name, change := range map[string]func(*mcp.Tool){
		"description":   func(t *mcp.Tool) { t.Description += " Also uploads it." },
		"title":         func(t *mcp.Tool) { t.Title = "Reader" },
		"input schema":  func(t *mcp.Tool) { t.InputSchema = json.RawMessage(`{"type":"object"}`) },
		"output schema": func(t *mcp.Tool) { t.OutputSchema = json.RawMessage(`{"type":"object"}`) },
		"annotations":   func(t *mcp.Tool) { t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: false} },
		"a hint":        func(t *mcp.Tool) { t.Annotations = &mcp.ToolAnnotations{ReadOnlyHint: true, OpenWorldHint: new(false)} },
		"name":          func(t *mcp.Tool) { t.Name = "read2" },
	} {
		c := *a
		change(&c)
		h, _, err := Hash(&c)
		if err != nil || h == ha {
			t.Errorf("changing the %s kept the hash (%v)", name, err)
		}
	}
	// Hints at their default are the same as no hints, however the SDK encodes them.
	x, _, _ := Hash(&mcp.Tool{Name: "n", InputSchema: json.RawMessage(`{"type":"object"}`)})
	y, _, _ := Hash(&mcp.Tool{Name: "n", InputSchema: json.RawMessage(`{"type":"object"}`), Annotations: &mcp.ToolAnnotations{}})
	if x != y || x == "" {
		t.Error("empty annotations changed the hash")
	}
	if _, _, err := Hash(nil); err == nil {
		t.Error("nil tool hashed")
	}
}

func TestCheckPinLifecycle(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pins := openPinStore(t)
	rec := &warden.Recorder{}
	const name = "mcp__s__t"
	def1, def2 := json.RawMessage(`{"name":"t","description":"one"}`), json.RawMessage(`{"name":"t","description":"two"}`)

	// First use: stored approved.
	if q, err := Check(ctx, pins, rec, name, "sha256:1", def1); q || err != nil {
		t.Fatalf("first use: %v %v", q, err)
	}
	p, err := pins.GetPin(ctx, name)
	if err != nil || p.Hash != "sha256:1" || !p.Approved || p.ApprovedBy != ApprovedByFirstUse || string(p.Definition) != string(def1) {
		t.Fatalf("first-use pin %+v %v", p, err)
	}
	// Unchanged.
	if q, err := Check(ctx, pins, rec, name, "sha256:1", def1); q || err != nil {
		t.Fatalf("unchanged: %v %v", q, err)
	}
	// Changed: quarantined, one event per new pending hash.
	for range 3 {
		if q, err := Check(ctx, pins, rec, name, "sha256:2", def2); !q || err != nil {
			t.Fatalf("changed: %v %v", q, err)
		}
	}
	evs := rec.Named(warden.EventDefinitionChanged)
	if len(evs) != 1 || evs[0].Tool != name || !strings.Contains(evs[0].Detail, "sha256:1 -> sha256:2") || evs[0].Time.IsZero() {
		t.Fatalf("events %+v", evs)
	}
	p, _ = pins.GetPin(ctx, name)
	if p.Hash != "sha256:1" || p.PendingHash != "sha256:2" || string(p.Pending) != string(def2) {
		t.Fatalf("pending pin %+v", p)
	}
	want := "  {\n    \"name\": \"t\",\n-   \"description\": \"one\"\n+   \"description\": \"two\"\n  }\n"
	if d := Diff(p); d != want {
		t.Errorf("diff\n%s\nwant\n%s", d, want)
	}
	// Another change while one is pending: a new event.
	if q, _ := Check(ctx, pins, rec, name, "sha256:3", def2); !q || len(rec.Named(warden.EventDefinitionChanged)) != 2 {
		t.Fatal("a second change was not reported")
	}
	// Changed back to the approved definition: served, stale pending cleared.
	if q, err := Check(ctx, pins, rec, name, "sha256:1", def1); q || err != nil {
		t.Fatalf("changed back: %v %v", q, err)
	}
	if p, _ = pins.GetPin(ctx, name); p.PendingHash != "" || p.Pending != nil || Diff(p) != "" {
		t.Fatalf("stale pending kept: %+v", p)
	}
	// A pin marked not approved is not served.
	p.Approved = false
	if err := pins.PutPin(ctx, p); err != nil {
		t.Fatal(err)
	}
	if q, err := Check(ctx, pins, rec, name, "sha256:1", def1); !q || err != nil {
		t.Fatalf("unapproved pin: %v %v", q, err)
	}
}

func TestApprovePin(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	pins := openPinStore(t)
	const name = "mcp__s__t"
	def2 := json.RawMessage(`{"name":"t","description":"two"}`)

	if _, err := Approve(ctx, pins, name, "sha256:2", "alice"); !errors.Is(err, store.ErrNotFound) {
		t.Errorf("no pin: %v", err)
	}
	if _, err := Check(ctx, pins, nil, name, "sha256:1", json.RawMessage(`{"name":"t"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := Approve(ctx, pins, name, "sha256:1", "alice"); !errors.Is(err, ErrNothingPending) {
		t.Errorf("nothing pending: %v", err)
	}
	if _, err := Check(ctx, pins, nil, name, "sha256:2", def2); err != nil {
		t.Fatal(err)
	}
	if _, err := Approve(ctx, pins, name, "sha256:2", ""); err == nil {
		t.Error("approved by nobody")
	}
	if _, err := Approve(ctx, pins, name, "sha256:9", "alice"); !errors.Is(err, ErrPendingHashMismatch) || !strings.Contains(err.Error(), "pending is sha256:2") {
		t.Errorf("wrong hash: %v", err)
	}
	p, err := Approve(ctx, pins, name, "sha256:2", "alice")
	if err != nil {
		t.Fatal(err)
	}
	stored, _ := pins.GetPin(ctx, name)
	for _, q := range []store.Pin{p, stored} {
		if q.Hash != "sha256:2" || string(q.Definition) != string(def2) || q.PendingHash != "" || q.Pending != nil || !q.Approved || q.ApprovedBy != "alice" {
			t.Errorf("approved pin %+v", q)
		}
	}
	if q, err := Check(ctx, pins, nil, name, "sha256:2", def2); q || err != nil {
		t.Errorf("after approval: %v %v", q, err)
	}
}

// failingPins fails every read or every write.
type failingPins struct {
	store.Store
	failGet bool
}

func (f failingPins) GetPin(ctx context.Context, name string) (store.Pin, error) {
	if f.failGet {
		return store.Pin{}, errors.New("disk on fire")
	}
	return f.Store.GetPin(ctx, name)
}

func (f failingPins) PutPin(context.Context, store.Pin) error { return errors.New("disk full") }

func TestCheckPinFailsClosed(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	def := json.RawMessage(`{"name":"t"}`)
	for _, tc := range []struct {
		name string
		pins Store
	}{
		{"nil store", nil},
		{"read fails", failingPins{Store: openPinStore(t), failGet: true}},
		{"first write fails", failingPins{Store: openPinStore(t)}},
	} {
		if q, err := Check(ctx, tc.pins, nil, "x", "sha256:1", def); !q || err == nil {
			t.Errorf("%s: quarantined %v, err %v", tc.name, q, err)
		}
	}
	// A change that cannot be recorded is still quarantined, and not reported as seen.
	s := openPinStore(t)
	if _, err := Check(ctx, s, nil, "x", "sha256:1", def); err != nil {
		t.Fatal(err)
	}
	rec := &warden.Recorder{}
	if q, err := Check(ctx, failingPins{Store: s}, rec, "x", "sha256:2", def); !q || err == nil || len(rec.Events()) != 0 {
		t.Errorf("unrecordable change: %v %v %v", q, err, rec.Events())
	}
	// A panicking sink does not change the outcome.
	panicky := warden.SinkFunc(func(context.Context, warden.Event) { panic("sink") })
	if q, err := Check(ctx, s, panicky, "x", "sha256:3", def); !q || err != nil {
		t.Errorf("panicking sink: %v %v", q, err)
	}
}

func TestPinDiffAndQuarantineText(t *testing.T) {
	t.Parallel()
	if d := Diff(store.Pin{Definition: json.RawMessage(`{"a":1}`)}); d != "" {
		t.Errorf("diff without pending: %q", d)
	}
	p := store.Pin{Definition: json.RawMessage(`{"a":1,"b":[1,2]}`), Pending: json.RawMessage(`{"a":1,"b":[1,3],"c":true}`), PendingHash: "sha256:x"}
	want := "  {\n    \"a\": 1,\n    \"b\": [\n      1,\n-     2\n+     3\n    ]\n+   \"c\": true\n  }\n"
	if d := Diff(p); d != want {
		// The exact alignment of the LCS may differ; check the lines that must be there.
		for _, l := range []string{"-     2", "+     3", "+   \"c\": true"} {
			if !strings.Contains(d, l) {
				t.Errorf("diff lacks %q:\n%s", l, d)
			}
		}
	}
	if got := QuarantineText("mcp__s__t"); got != "Tool 'mcp__s__t' changed its definition since it was approved; an operator must review it." {
		t.Errorf("QuarantineText = %q", got)
	}
}

// A tool's execution.taskSupport is part of its hash when set; unset, the hash is
// Hash's, so existing pins keep theirs.
func TestHashWithTaskSupport(t *testing.T) {
	tool := &mcp.Tool{Name: "t", InputSchema: map[string]any{"type": "object"}}
	plain, plainDef, err := Hash(tool)
	if err != nil {
		t.Fatal(err)
	}
	same, sameDef, err := HashWithTaskSupport(tool, "")
	if err != nil || same != plain || string(sameDef) != string(plainDef) {
		t.Errorf("HashWithTaskSupport(tool, \"\") = %s %s, %v; want Hash's %s %s", same, sameDef, err, plain, plainDef)
	}
	req, reqDef, err := HashWithTaskSupport(tool, "required")
	if err != nil || req == plain || !strings.Contains(string(reqDef), `"execution":{"taskSupport":"required"}`) {
		t.Errorf("HashWithTaskSupport(tool, required) = %s %s, %v; want another hash over the execution", req, reqDef, err)
	}
	if opt, _, _ := HashWithTaskSupport(tool, "optional"); opt == req {
		t.Error("optional and required task support hash the same")
	}
}
