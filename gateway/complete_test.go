package gateway_test

// completion/complete as a judged request, against the conformance fixture with
// -test-tools as a real stdio upstream: it writes every completion request it gets
// to stderr, which the gateway logs, so a test sees what reached the upstream.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// compPolicy is subPolicy with a rule on the template's URI (the rules layer allows
// the rest), conditions on the prompt's arguments and the template's URI, and a tool
// call that halts the session.
const compPolicy = subPolicy + `rules:
  deny: {"resource:conf": ["test://template/12*"]}
  allow: {"resource:conf": ["*"], "prompt:*": ["*"], mcp__conf__warden_test_update_resource: ["*"]}
conditions:
  - id: no-se-arg1
    when: 'tool == "prompt:mcp__conf__test_prompt_with_arguments" && has(args.arg1) && args.arg1.startsWith("se")'
    effect: deny
    rationale: arg1 may not start with se
  - id: ask-arg2
    when: 'tool == "prompt:mcp__conf__test_prompt_with_arguments" && has(args.arg2) && args.arg2 == "ask"'
    effect: escalate
    rationale: arg2 ask needs a person
  - id: halt-arg2
    when: 'tool == "prompt:mcp__conf__test_prompt_with_arguments" && has(args.arg2) && args.arg2 == "halt"'
    effect: halt
    reason: test:halt-arg2
    rationale: arg2 halt stops the run
  - id: no-id-7
    when: 'tool == "resource:conf" && string(args.uri) == "test://template/7/data"'
    effect: deny
    rationale: id 7 is not for agents
  - id: bob-arg2-unguarded
    when: 'identity.principal == "bob" && tool == "prompt:mcp__conf__test_prompt_with_arguments" && args.arg2 == "zzz"'
    effect: deny
    rationale: bob may not use arg2 zzz
  - id: halt-on-request
    when: 'tool == "mcp__conf__warden_test_update_resource" && string(args.uri) == "test://halt"'
    effect: halt
    reason: test:halt
    tell_llm: "Stopped."
`

const compTool = "completion:prompt:" + subPrompt

// compSent is the fixture's log line of a completion request it got.
func compSent(refType, ref, arg, value string) []string {
	return []string{"upstream stderr", fmt.Sprintf("conformanceserver: completion %s %s %s=%s", refType, ref, arg, value)}
}

// compComplete asks for a completion with context arguments.
func compComplete(t *testing.T, cs *mcp.ClientSession, ref *mcp.CompleteReference, ctxArgs map[string]string, arg, value string) (*mcp.CompleteResult, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	p := &mcp.CompleteParams{Ref: ref, Argument: mcp.CompleteParamsArgument{Name: arg, Value: value}}
	if ctxArgs != nil {
		p.Context = &mcp.CompleteContext{Arguments: ctxArgs}
	}
	return cs.Complete(ctx, p)
}

// compWant checks a completion's values.
func compWant(t *testing.T, what string, res *mcp.CompleteResult, err error, values ...string) {
	t.Helper()
	if err != nil {
		t.Fatalf("%s: %v", what, err)
	}
	if values == nil {
		values = []string{}
	}
	if !slices.Equal(res.Completion.Values, values) || (len(values) == 0 && (res.Completion.Total != 0 || res.Completion.HasMore)) {
		t.Errorf("%s: completion %+v, want values %q", what, res.Completion, values)
	}
}

func TestGatewayCompletionJudged(t *testing.T) {
	e := subStartWith(t, compPolicy, "-test-tools")
	r := e.connect(t, gwReaderToken, nil)
	w := e.connect(t, gwWriterToken, nil)
	prompt := &mcp.CompleteReference{Type: "ref/prompt", Name: subPrompt}
	tmpl := &mcp.CompleteReference{Type: "ref/resource", URI: subTemplate}
	n := 0 // reader-agent's completion records of the prompt so far
	want := func(what string, rec store.CallRecord) {
		t.Helper()
		n++
		subWantRecords(t, e, compTool, "reader-agent", n, rec)
	}

	// Allowed: sent with the upstream name, answered by the fixture, recorded as ran.
	res, err := compComplete(t, r, prompt, nil, "arg1", "pa")
	compWant(t, "arg1=pa", res, err, "paris", "park", "party")
	e.log.WaitCount(t, time.Minute, 1, compSent("ref/prompt", "test_prompt_with_arguments", "arg1", "pa")...)
	want("arg1=pa", store.CallRecord{Status: warden.StatusRan, Executed: true, RuleID: "*", Args: []byte(`{"arg1":"pa"}`), Session: r.ID()})

	// The value being completed is judged as the prompt's argument: denied, so no
	// values, and never sent.
	res, err = compComplete(t, r, prompt, nil, "arg1", "se")
	compWant(t, "arg1=se", res, err)
	want("arg1=se", store.CallRecord{Status: warden.StatusRefused, Stage: warden.StagePermission, Effect: "deny", RuleID: "no-se-arg1", Args: []byte(`{"arg1":"se"}`), Session: r.ID()})
	// ... and so are the context's arguments.
	res, err = compComplete(t, r, prompt, map[string]string{"arg1": "secret"}, "arg2", "wo")
	compWant(t, "arg2=wo with arg1=secret", res, err)
	want("arg2=wo with arg1=secret", store.CallRecord{Status: warden.StatusRefused, Stage: warden.StagePermission, Effect: "deny", RuleID: "no-se-arg1", Args: []byte(`{"arg1":"secret","arg2":"wo"}`)})
	// An ask asks nobody: no values, nothing pending.
	res, err = compComplete(t, r, prompt, map[string]string{"arg1": "paris"}, "arg2", "ask")
	compWant(t, "arg2=ask", res, err)
	want("arg2=ask", store.CallRecord{Status: warden.StatusRefused, Stage: warden.StagePermission, Effect: "ask", RuleID: "ask-arg2", Args: []byte(`{"arg1":"paris","arg2":"ask"}`)})
	if p := e.pending(t, "prompt:"+subPrompt, `{"arg1":"paris","arg2":"ask"}`); len(p) != 0 {
		t.Errorf("a completion asked a person: %+v", p)
	}
	// A halt refuses the completion and does not halt the session.
	res, err = compComplete(t, r, prompt, nil, "arg2", "halt")
	compWant(t, "arg2=halt", res, err)
	want("arg2=halt", store.CallRecord{Status: warden.StatusRefused, Stage: warden.StagePermission, Effect: "halt", RuleID: "halt-arg2", Reason: "test:halt-arg2", Args: []byte(`{"arg2":"halt"}`)})
	// An argument the prompt does not take.
	res, err = compComplete(t, r, prompt, nil, "arg3", "x")
	compWant(t, "arg3", res, err)
	want("arg3", store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageValidation, Reason: `completion argument "arg3" is not one the prompt takes`, Args: []byte(`{"arg3":"x"}`)})
	res, err = compComplete(t, r, prompt, map[string]string{"arg9": "x"}, "arg1", "pa")
	compWant(t, "context arg9", res, err)
	want("context arg9", store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageValidation, Reason: `completion argument "arg9" is not one the prompt takes`, Args: []byte(`{"arg1":"pa","arg9":"x"}`)})

	// A template: judged as reading the URI it expands to.
	const tmplTool = "completion:resource:conf"
	res, err = compComplete(t, r, tmpl, nil, "id", "1")
	compWant(t, "id=1", res, err, "1", "12", "123")
	subWantRecords(t, e, tmplTool, "reader-agent", 1, store.CallRecord{Status: warden.StatusRan, Executed: true, RuleID: "*", Args: []byte(`{"uri":"test://template/1/data"}`), Session: r.ID()})
	res, err = compComplete(t, r, tmpl, nil, "id", "7")
	compWant(t, "id=7", res, err)
	subWantRecords(t, e, tmplTool, "reader-agent", 2, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StagePermission, Effect: "deny", RuleID: "no-id-7", Args: []byte(`{"uri":"test://template/7/data"}`)})
	// A rule's pattern judges the expanded URI too.
	res, err = compComplete(t, r, tmpl, nil, "id", "12")
	compWant(t, "id=12", res, err)
	rec12 := e.lastCall(t, tmplTool, "reader-agent")
	if rec12.Status != warden.StatusRefused || rec12.Stage != warden.StagePermission || rec12.Effect != "deny" || rec12.RuleID == "" || string(rec12.Args) != `{"uri":"test://template/12/data"}` {
		t.Errorf("audit of the completion a rule denies: %+v", rec12)
	}
	res, err = compComplete(t, r, tmpl, nil, "id", "..")
	compWant(t, "id=..", res, err)
	subWantRecords(t, e, tmplTool, "reader-agent", 4, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageValidation, Reason: `resource URI not in normal form: it has a ".." segment`, Args: []byte(`{"uri":"test://template/../data"}`)})
	res, err = compComplete(t, r, tmpl, nil, "name", "x")
	compWant(t, "template variable name", res, err)
	subWantRecords(t, e, tmplTool, "reader-agent", 5, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageValidation, Reason: `completion argument "name" is not one the resource template takes`, Args: []byte(`{"uri":"test://template//data"}`)})
	// A listed resource has no variables to complete.
	res, err = compComplete(t, r, &mcp.CompleteReference{Type: "ref/resource", URI: subStatic}, nil, "id", "1")
	compWant(t, "listed resource", res, err)
	subWantRecords(t, e, tmplTool, "reader-agent", 6, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageValidation, Reason: `completion argument "id" is not one the resource takes`, Args: []byte(`{"uri":"test://static-text"}`)})

	// None of the refused values reached the upstream: its log, in order, holds this
	// last request and before it only the allowed ones.
	res, err = compComplete(t, r, prompt, nil, "arg2", "wo")
	compWant(t, "arg2=wo", res, err, "world", "wonder")
	n++
	e.log.WaitCount(t, time.Minute, 1, compSent("ref/prompt", "test_prompt_with_arguments", "arg2", "wo")...)
	if got := e.log.Count("upstream stderr", "conformanceserver: completion "); got != 3 {
		t.Errorf("the upstream got %d completion requests, want 3 (arg1=pa, id=1, arg2=wo):\n%s", got, e.log.String())
	}

	// Hidden from the role: answered as unknown, recorded at lookup; a prompt nobody
	// serves is not recorded.
	_, err = compComplete(t, w, prompt, nil, "arg1", "pa")
	if werr := subWireError(t, "writer completes the prompt", err); werr.Code != jsonrpc.CodeInvalidParams || werr.Message != fmt.Sprintf("unknown prompt %q", subPrompt) {
		t.Errorf("writer completes the prompt: error %d %q", werr.Code, werr.Message)
	}
	subWantRecords(t, e, compTool, "writer-agent", 1, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageLookup, Reason: `prompt hidden from the caller: not allowed to role "writer"`, Args: []byte(`{"arg1":"pa"}`), Session: w.ID()})
	_, err = compComplete(t, w, tmpl, nil, "id", "1")
	subWantNotFound(t, "writer completes the template", err, subTemplate)
	subWantRecords(t, e, tmplTool, "writer-agent", 1, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageLookup, Reason: `resources hidden from the caller: not allowed to role "writer"`, Args: []byte(`{"uri":"test://template/{id}/data"}`)})
	_, err = compComplete(t, r, &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__conf__nothing"}, nil, "a", "b")
	if werr := subWireError(t, "unknown prompt", err); werr.Message != `unknown prompt "mcp__conf__nothing"` {
		t.Errorf("unknown prompt: error %d %q", werr.Code, werr.Message)
	}
	if recs := e.calls(t, "completion:prompt:mcp__conf__nothing", ""); len(recs) != 0 {
		t.Errorf("a completion of a prompt nobody serves was recorded: %+v", recs)
	}

	// A condition that reads an argument the completion does not carry yet cannot be
	// evaluated, and denies (as it would deny the get without it).
	b := e.connect(t, gwBobToken, nil)
	res, err = compComplete(t, b, prompt, nil, "arg1", "pa")
	compWant(t, "bob: arg1=pa without arg2", res, err)
	rec := subWantRecords(t, e, compTool, "bob", 1, store.CallRecord{Status: warden.StatusRefused, Stage: warden.StagePermission, Effect: "deny", RuleID: "bob-arg2-unguarded", Args: []byte(`{"arg1":"pa"}`)})
	if !strings.HasPrefix(rec.Rationale, "condition 'bob-arg2-unguarded' could not be evaluated: ") {
		t.Errorf("rationale of the unguarded condition: %q", rec.Rationale)
	}
	res, err = compComplete(t, b, prompt, map[string]string{"arg2": "world"}, "arg1", "pa")
	compWant(t, "bob: arg1=pa with arg2", res, err, "paris", "park", "party")
	subWantRecords(t, e, compTool, "bob", 2, store.CallRecord{Status: warden.StatusRan, Executed: true, RuleID: "*", Args: []byte(`{"arg1":"pa","arg2":"world"}`)})

	// A halted session gets no values for anything, served or not; the served ones
	// are recorded at the gate.
	gwWant(t, gwCall(t, r, subUpdate, map[string]any{"uri": "test://halt"}), true, "Stopped.")
	res, err = compComplete(t, r, prompt, nil, "arg1", "pa")
	compWant(t, "halted: arg1=pa", res, err)
	want("halted", store.CallRecord{Status: warden.StatusRefused, Stage: warden.StageGate, Reason: "session halted: every call after a halt is refused", Args: []byte(`{"arg1":"pa"}`)})
	res, err = compComplete(t, r, &mcp.CompleteReference{Type: "ref/prompt", Name: "mcp__conf__nothing"}, nil, "a", "b")
	compWant(t, "halted: unknown prompt", res, err)
	if got := e.log.Count("upstream stderr", "conformanceserver: completion "); got != 4 {
		t.Errorf("the upstream got %d completion requests, want 4", got)
	}
}
