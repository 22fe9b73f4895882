package agent_test

// Sealed checkpoints. Issue 13, deliverable 2: "Checkpoint files are integrity-protected
// (an HMAC with a key the runtime keeps ...): an edited checkpoint is refused with a
// clear error, not resumed." And the finding it answers: "A consistently edited
// checkpoint redirects an approval. Editing the pending arguments, the original
// arguments and the digest together makes Approved{By} run a call the person never saw."

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"regexp"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
)

// testKey is the CheckpointKey of the worlds in these tests.
var testKey = []byte("0123456789abcdef0123456789abcdef")

// macOf computes a checkpoint's MAC from the format documented on agent.Paused,
// independently of the code under test.
func macOf(key []byte, format string, body []byte) string {
	var c bytes.Buffer
	if err := json.Compact(&c, body); err != nil {
		panic(err)
	}
	m := hmac.New(sha256.New, key)
	m.Write([]byte("warden-seal\x00" + format + "\x00"))
	m.Write(c.Bytes())
	return "hmac-sha256:" + hex.EncodeToString(m.Sum(nil))
}

// envelopeOf splits a sealed checkpoint.
func envelopeOf(t *testing.T, data []byte) (env map[string]json.RawMessage, body map[string]any) {
	t.Helper()
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(env["body"], &body); err != nil {
		t.Fatal(err)
	}
	return env, body
}

// edited applies f to the checkpoint's body and returns the document with the body
// replaced and the old seal kept: what someone without the key can produce.
func edited(t *testing.T, data []byte, f func(body map[string]any)) []byte {
	t.Helper()
	env, body := envelopeOf(t, data)
	f(body)
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	env["body"] = b
	out, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// reseal is edited, sealed again under key: what a writer holding the key can produce.
func reseal(t *testing.T, data, key []byte, f func(body map[string]any)) []byte {
	t.Helper()
	env, _ := envelopeOf(t, edited(t, data, f))
	var format string
	if err := json.Unmarshal(env["format"], &format); err != nil {
		t.Fatal(err)
	}
	mac, _ := json.Marshal(macOf(key, format, env["body"]))
	env["mac"] = mac
	out, err := json.Marshal(env)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// redirect edits a paused refund of 1500 into a refund of 99999 consistently: the
// pending arguments, the original arguments, their digest, the model's call and the
// conversation all agree on the new amount.
func redirect(t *testing.T) (func(body map[string]any), string) {
	t.Helper()
	args, err := warden.ParseArgs([]byte(`{"amount":99999,"currency":"EUR"}`))
	if err != nil {
		t.Fatal(err)
	}
	edit := func(body map[string]any) {
		p := body["pending"].(map[string]any)
		p["args"] = map[string]any{"amount": 99999, "currency": "EUR"}
		p["original"] = map[string]any{"amount": 99999}
		p["digest"] = args.Digest()
		body["pending_call"].(map[string]any)["args"] = map[string]any{"amount": 99999}
		msgs := body["messages"].([]any)
		msgs[len(msgs)-1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["args"] = map[string]any{"amount": 99999}
	}
	return edit, approvalOf(t, edit)
}

// approvalOf is the approval digest of the pending decision of a paused refund of 1500
// after edit: what the person would be shown if the edit were trusted.
func approvalOf(t *testing.T, edit func(body map[string]any)) string {
	t.Helper()
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	_, body := envelopeOf(t, res.Paused.Checkpoint)
	edit(body)
	b, _ := json.Marshal(body["pending"])
	var pd warden.PendingDecision
	if err := json.Unmarshal(b, &pd); err != nil {
		t.Fatal(err)
	}
	return pd.ApprovalDigest()
}

func TestCheckpoint_SealFormat(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	env, body := envelopeOf(t, res.Paused.Checkpoint)
	var format, keyID, mac string
	json.Unmarshal(env["format"], &format)
	json.Unmarshal(env["key_id"], &keyID)
	json.Unmarshal(env["mac"], &mac)
	if format != "warden.agent.checkpoint/v2" || body["format"] != "warden.agent.checkpoint/v2" {
		t.Errorf("format %q, body format %v", format, body["format"])
	}
	if !regexp.MustCompile(`^[0-9a-f]{16}$`).MatchString(keyID) {
		t.Errorf("key_id %q", keyID)
	}
	if want := macOf(testKey, format, env["body"]); mac != want {
		t.Errorf("mac %s, want %s (HMAC-SHA256 of the documented input)", mac, want)
	}
	if len(env) != 4 {
		t.Errorf("the sealed document has fields %v, want format, key_id, mac, body", env)
	}

	// Whitespace is not content: the checkpoint indented inside another document
	// still resumes.
	var indented bytes.Buffer
	if err := json.Indent(&indented, res.Paused.Checkpoint, "    ", "\t"); err != nil {
		t.Fatal(err)
	}
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("done")}})
	pd, err := w2.agent.VerifyCheckpoint(indented.Bytes())
	if err != nil || pd.Digest != res.Paused.Pending.Digest || pd.Tool != "refund" {
		t.Fatalf("VerifyCheckpoint of the indented checkpoint: %+v, %v", pd, err)
	}
	if _, err := w2.agent.Resume(context.Background(), indented.Bytes(), warden.Approved{By: "op", Digest: pd.ApprovalDigest()}); err != nil {
		t.Fatal(err)
	}
	if n := w2.probe.count("refund"); n != 1 {
		t.Errorf("refund ran %d times", n)
	}
}

// The finding itself: the consistent edit is refused, by the seal, and nothing runs.
// With the key, the same edit is accepted: the key is what protects an approval.
func TestCheckpoint_ConsistentEditIsRefused(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	f, approval := redirect(t)
	for _, tt := range []struct {
		name string
		cp   []byte
	}{
		{"edited body", edited(t, res.Paused.Checkpoint, f)},
		// Whoever edits may also recompute a MAC, under any key but the Agent's.
		{"sealed again under another key, key id kept", reseal(t, res.Paused.Checkpoint, []byte("another key of thirty-two bytes!"), f)},
	} {
		t.Run(tt.name, func(t *testing.T) {
			w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("Refunded 99999.")}})
			_, err := w2.agent.Resume(context.Background(), tt.cp, warden.Approved{By: "op", Digest: approval})
			const want = "agent: checkpoint failed its integrity check: its seal does not match its content: it was changed after the pause, and is not resumed"
			if !errors.Is(err, agent.ErrCheckpointTampered) || err.Error() != want {
				t.Errorf("err %v\nwant %s", err, want)
			}
			if _, verr := w2.agent.VerifyCheckpoint(tt.cp); !errors.Is(verr, agent.ErrCheckpointTampered) {
				t.Errorf("VerifyCheckpoint: %v", verr)
			}
			if w2.probe.count("") != 0 || w2.sc.calls() != 0 {
				t.Errorf("something ran: tools %+v, model calls %d", w2.probe.all(), w2.sc.calls())
			}
		})
	}

	// Control: sealed again under the Agent's own key, the edit goes through. Nothing
	// in the content shows it; only the key does.
	forged := reseal(t, res.Paused.Checkpoint, testKey, f)
	w3 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("Refunded 99999.")}})
	if _, err := w3.agent.Resume(context.Background(), forged, warden.Approved{By: "op", Digest: approval}); err != nil {
		t.Fatal(err)
	}
	if got := w3.probe.all(); len(got) != 1 || got[0].args != `{"amount":99999,"currency":"EUR"}` {
		t.Errorf("with the key the edited call runs: %+v", got)
	}
}

// Every part of the sealed document counts.
func TestCheckpoint_EditedSealIsRefused(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	good := res.Paused.Checkpoint
	set := func(field, value string) []byte {
		var env map[string]json.RawMessage
		if err := json.Unmarshal(good, &env); err != nil {
			t.Fatal(err)
		}
		if value == "" {
			delete(env, field)
		} else {
			env[field] = json.RawMessage(value)
		}
		b, _ := json.Marshal(env)
		return b
	}
	var mac string
	var env map[string]json.RawMessage
	json.Unmarshal(good, &env)
	json.Unmarshal(env["mac"], &mac)
	flipped := mac[:len(mac)-1] + map[bool]string{true: "1", false: "0"}[mac[len(mac)-1] == '0']
	tests := []struct {
		name string
		cp   []byte
		is   error
		want string
	}{
		{"mac changed", set("mac", `"`+flipped+`"`), agent.ErrCheckpointTampered, "its seal does not match its content"},
		{"mac removed", set("mac", ""), agent.ErrMalformedCheckpoint, "it has no mac or no body"},
		{"another algorithm", set("mac", `"sha256:`+strings.TrimPrefix(mac, "hmac-sha256:")+`"`), agent.ErrCheckpointTampered, "its seal does not match its content"},
		{"body removed", set("body", ""), agent.ErrMalformedCheckpoint, "it has no mac or no body"},
		{"key id changed", set("key_id", `"0000000000000000"`), agent.ErrCheckpointKey, "sealed under key id 0000000000000000"},
		{"format changed", set("format", `"warden.agent.checkpoint/v3"`), agent.ErrMalformedCheckpoint, `format "warden.agent.checkpoint/v3", want "warden.agent.checkpoint/v2"`},
		{"a field added", set("approved", `true`), agent.ErrMalformedCheckpoint, `unknown field "approved"`},
		{"body format changed", reseal(t, good, testKey, func(b map[string]any) { b["format"] = "warden.agent.checkpoint/v1" }), agent.ErrMalformedCheckpoint, "format"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("x")}})
			_, err := w2.agent.Resume(context.Background(), tt.cp, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
			if !errors.Is(err, tt.is) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("err %v, want %v mentioning %q", err, tt.is, tt.want)
			}
			if w2.probe.count("") != 0 || w2.sc.calls() != 0 {
				t.Error("something ran")
			}
		})
	}
}

// A checkpoint written before checkpoints were sealed has no integrity: refused.
func TestCheckpoint_UnsealedFormatIsRefused(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	_, body := envelopeOf(t, res.Paused.Checkpoint)
	body["format"] = "warden.agent.checkpoint/v1"
	old, _ := json.Marshal(body)
	w2 := newWorld(t, worldOpts{revision: "rev-1", turns: []agent.ModelResponse{say("x")}})
	_, err := w2.agent.Resume(context.Background(), old, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	const want = `agent: checkpoint failed its integrity check: it has no seal (format "warden.agent.checkpoint/v1", written before checkpoints were sealed), so nothing shows it is the one that paused; it is not resumed: run the task again`
	if !errors.Is(err, agent.ErrCheckpointTampered) || err.Error() != want {
		t.Errorf("err %v\nwant %s", err, want)
	}
	if w2.probe.count("") != 0 || w2.sc.calls() != 0 {
		t.Error("something ran")
	}
}

// Without Options.CheckpointKey an Agent seals with a random key of its own: its
// checkpoints resume in it, and in no other Agent.
func TestCheckpoint_DefaultKeyIsTheAgentsOwn(t *testing.T) {
	var p probe
	build := func(turns ...agent.ModelResponse) (*agent.Agent, *scripted) {
		pol := roles(t, map[string][]string{"support": {"refund"}}, "support", nil)
		ask := &warden.Middleware{Name: "ask", OnToolCall: func(context.Context, warden.ToolCall) warden.CallOutcome {
			return warden.AskPerson("refund?", "")
		}}
		g := bind(t, warden.Config{Checkers: []warden.Checker{pol}, Middleware: []*warden.Middleware{ask}, CanPause: true}, p.tool("refund", refundSchema))
		sc := script(turns...)
		return newAgent(t, sc, g, nil), sc
	}
	a1, _ := build(use(tc("r1", "refund", `{"amount":5}`)), say("done"))
	res, err := a1.Run(context.Background(), "refund")
	if err != nil || res.Paused == nil {
		t.Fatalf("%+v %v", res, err)
	}
	approve := warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()}

	a2, sc2 := build(say("done"))
	_, err = a2.Resume(context.Background(), res.Paused.Checkpoint, approve)
	const want = "agent: checkpoint sealed under another key: another Agent paused it, and this Agent has no Options.CheckpointKey (without one an Agent seals its checkpoints with a random key of its own, so they resume only in that Agent); set the same Options.CheckpointKey in the Agent that pauses and the one that resumes"
	if !errors.Is(err, agent.ErrCheckpointKey) || err.Error() != want {
		t.Errorf("err %v\nwant %s", err, want)
	}
	if p.count("") != 0 || sc2.calls() != 0 {
		t.Fatal("something ran in another Agent")
	}

	res2, err := a1.Resume(context.Background(), res.Paused.Checkpoint, approve)
	if err != nil || res2.Answer != "done" || p.count("refund") != 1 {
		t.Errorf("the same Agent: %+v, %v, runs %d", res2, err, p.count("refund"))
	}
}

// A configured key that is not the one the checkpoint was sealed with.
func TestCheckpoint_OtherConfiguredKey(t *testing.T) {
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	other := bytes.Repeat([]byte("k3y!"), 8)
	pol := roles(t, map[string][]string{"support": {"refund", "lookup"}}, "support", nil)
	var p probe
	g := bind(t, warden.Config{Checkers: []warden.Checker{pol}, CanPause: true, Revision: "rev-1"}, p.tool("refund", refundSchema), p.tool("lookup", ""))
	a := newAgent(t, script(say("x")), g, &agent.Options{CheckpointKey: other})
	_, err := a.Resume(context.Background(), res.Paused.Checkpoint, warden.Approved{By: "op", Digest: res.Paused.Pending.ApprovalDigest()})
	if !errors.Is(err, agent.ErrCheckpointKey) || !regexp.MustCompile(`^agent: checkpoint sealed under another key \(sealed under key id [0-9a-f]{16}, this key's id is [0-9a-f]{16}\): resume it with the Options.CheckpointKey it was paused with$`).MatchString(err.Error()) {
		t.Errorf("err %v", err)
	}
	if p.count("") != 0 {
		t.Error("something ran")
	}
}

func TestCheckpoint_KeyChecksAtNew(t *testing.T) {
	g := bind(t, warden.Config{Ungoverned: true})
	for _, tt := range []struct {
		key  []byte
		want string
	}{
		{[]byte("short"), "agent: Options.CheckpointKey: the key is 5 bytes, want at least 32"},
		{make([]byte, 32), "agent: Options.CheckpointKey: the key is 32 copies of the byte 0x00; fill it from a random source (crypto/rand)"},
		{bytes.Repeat([]byte{'a'}, 64), "agent: Options.CheckpointKey: the key is 64 copies of the byte 0x61; fill it from a random source (crypto/rand)"},
	} {
		if _, err := agent.New(script(), g, &agent.Options{CheckpointKey: tt.key}); err == nil || err.Error() != tt.want {
			t.Errorf("key %q: err %v, want %s", tt.key, err, tt.want)
		}
	}
	if _, err := agent.New(script(), g, &agent.Options{CheckpointKey: testKey}); err != nil {
		t.Errorf("a 32-byte key: %v", err)
	}
	// The Agent keeps its own copy: changing the caller's slice afterwards changes
	// nothing.
	key := bytes.Clone(testKey)
	a := newAgent(t, script(), g, &agent.Options{CheckpointKey: key})
	copy(key, "changed after New changed after New")
	_, res := pause(t, use(tc("r1", "refund", `{"amount":1500}`)))
	if _, err := a.VerifyCheckpoint(res.Paused.Checkpoint); err != nil {
		t.Errorf("the Agent's key changed with the caller's slice: %v", err)
	}
}
