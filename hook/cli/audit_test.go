package cli

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/audit"
	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/policy/explain"
	"github.com/wardenhq/warden/store"
)

// hookPolicy is the policy of warden's own hook tests.
const hookPolicy = "../../cmd/warden/testdata/hook/claude-code.yaml"

// hookEntry records the PreToolUse decision of one Bash command in a new store and
// returns the entry.
func hookEntry(t *testing.T, pol *policy.Policy, in hook.ClaudeInput) store.CallRecord {
	t.Helper()
	ctx := context.Background()
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "hook.db")
	call, err := hook.MapClaudeTool(in.ToolName, in.ToolInput, in.Cwd)
	if err != nil {
		t.Fatal(err)
	}
	r := explain.Evaluate(ctx, pol, explain.Call{Tool: call.Tool, Args: call.Args})
	if err := recordPre(ctx, dsn, in, call, r); err != nil {
		t.Fatal(err)
	}
	return onlyEntry(t, dsn)
}

func onlyEntry(t *testing.T, dsn string) store.CallRecord {
	t.Helper()
	st, err := store.Open(context.Background(), dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	recs, err := st.QueryCalls(context.Background(), store.CallFilter{})
	if err != nil || len(recs) != 1 {
		t.Fatalf("QueryCalls: %d entries, %v; want 1", len(recs), err)
	}
	return recs[0]
}

// The hook's entry for each kind of decision holds exactly what it decided.
func TestHookEntryFields(t *testing.T) {
	pol, err := policy.LoadFile(hookPolicy, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		command string
		want    store.CallRecord
	}{
		{"git status", store.CallRecord{Stage: warden.StagePermission, Effect: "allow", RuleID: "git status*", Status: store.StatusStarted, Unknown: true, Executed: true}},
		{"sudo rm -rf /", store.CallRecord{Stage: warden.StagePermission, Effect: "deny", RuleID: "sudo *", Status: warden.StatusRefused}},
		{"git push origin main", store.CallRecord{Stage: warden.StageHuman, Effect: "ask", RuleID: "git push *", Status: warden.StatusPending}},
	} {
		args := warden.MustParseArgs(`{"command":` + string(warden.AppendJSONValue(nil, tc.command)) + `}`)
		in := hook.ClaudeInput{ToolName: "Bash", ToolInput: args, Cwd: "/work/app", ToolUseID: "toolu_1", SessionID: "sess"}
		got := hookEntry(t, pol, in)
		d, _ := pol.Explain(context.Background(), warden.Request{Target: "bash", Capability: warden.CapToolCall, Args: args, Actor: pol.ActiveRole()})
		want := tc.want
		want.CallID, want.Session, want.Tool = "toolu_1", "sess", "bash"
		want.ArgsDigest, want.Args = args.Digest(), args.AppendJSON(nil)
		want.Rationale, want.Reason, want.Revision = d.Rationale, d.Reason, pol.Revision()
		if diff := cmp.Diff(want, got, cmpopts.IgnoreFields(store.CallRecord{}, "Seq", "Time")); diff != "" {
			t.Errorf("%s (-want +got):\n%s", tc.command, diff)
		}
	}
}

// Arguments over maxAuditArgs are kept only as their digest.
func TestHookEntryBoundsArgs(t *testing.T) {
	pol, err := policy.LoadFile(hookPolicy, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := warden.MustParseArgs(`{"command":"echo ` + strings.Repeat("x", maxAuditArgs) + `"}`)
	got := hookEntry(t, pol, hook.ClaudeInput{ToolName: "Bash", ToolInput: args, Cwd: "/work/app", ToolUseID: "toolu_big", SessionID: "sess"})
	if got.Args != nil || got.ArgsDigest != args.Digest() {
		t.Errorf("args %d bytes, digest %q; want none and %s", len(got.Args), got.ArgsDigest, args.Digest())
	}
}

// A refusal the hook records is the entry a Guard under the same policy writes for the
// same call, but for the size of what the model read (the Guard's model reads the
// refusal; Claude Code's model reads Claude Code's answer) and the time the Guard's
// pipeline took.
func TestHookEntryMatchesGuard(t *testing.T) {
	ctx := context.Background()
	pol, err := policy.LoadFile(hookPolicy, nil)
	if err != nil {
		t.Fatal(err)
	}
	args := warden.MustParseArgs(`{"command":"sudo rm -rf /"}`)
	hooked := hookEntry(t, pol, hook.ClaudeInput{ToolName: "Bash", ToolInput: args, Cwd: "/work/app", ToolUseID: "toolu_1", SessionID: "sess"})

	dsn := "sqlite://" + filepath.Join(t.TempDir(), "guard.db")
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	reg := &warden.Registry{}
	if err := reg.Register(warden.Executable{Tool: warden.Tool{Name: "bash"}, Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
		t.Error("the refused call ran")
		return nil, nil
	}}); err != nil {
		t.Fatal(err)
	}
	g, err := reg.Bind(warden.Config{Checkers: []warden.Checker{pol}, Journal: audit.NewJournal(st, nil), Revision: pol.Revision()})
	if err != nil {
		t.Fatal(err)
	}
	if o, err := g.Call(ctx, warden.Call{ID: "toolu_1", Session: "sess", Tool: "bash", Args: args}); err != nil || o.Status != warden.StatusRefused {
		t.Fatalf("Guard: %s, %v", o.Status, err)
	}
	if err := st.Close(); err != nil {
		t.Fatal(err)
	}
	guarded := onlyEntry(t, dsn)
	if guarded.ResultSize == 0 {
		t.Error("the Guard's entry has no result size")
	}
	if diff := cmp.Diff(guarded, hooked, cmpopts.IgnoreFields(store.CallRecord{}, "Seq", "Time", "Duration", "ResultSize")); diff != "" {
		t.Errorf("Guard entry vs hook entry (-guard +hook):\n%s", diff)
	}
}
