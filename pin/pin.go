// Tool definition pinning: the first definition of a tool seen is trusted and stored;
// any later change is held for an operator's review and the tool is quarantined
// (hidden and refused) until the operator approves exactly the definition they saw.

package pin

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fanout"
	"github.com/wardenhq/warden/store"
)

// Store is where tool definition pins live. [store.Store] satisfies it. GetPin
// must report a missing pin with an error matching [store.ErrNotFound]; any other
// error is a failure, and a tool whose pin cannot be read or written is not served.
type Store interface {
	GetPin(ctx context.Context, name string) (store.Pin, error)
	PutPin(ctx context.Context, p store.Pin) error
}

// ApprovedByFirstUse is the ApprovedBy of a pin stored the first time a tool was
// seen (trust on first use).
const ApprovedByFirstUse = "first-use"

// Errors of [Approve], for errors.Is. A pin that does not exist is reported with
// [store.ErrNotFound].
var (
	// ErrNothingPending: the tool's definition has not changed since it was approved,
	// so there is nothing to approve.
	ErrNothingPending = errors.New("no changed definition is pending review")
	// ErrPendingHashMismatch: the pending definition is not the one the operator
	// reviewed (it changed again); the operator must review the new one.
	ErrPendingHashMismatch = errors.New("the pending definition is not the one reviewed")
)

// Hash returns "sha256:<hex>" of the canonical JSON of a tool's whole
// definition as listed upstream, and that canonical JSON.
//
// The definition is every field of the tool except "_meta": name, title,
// description, input schema, output schema, annotations and icons (and any field a
// later protocol adds). "_meta" is left out on purpose: servers put volatile data
// there (timestamps, request ids, tracing), it is not shown to the model as the
// tool's contract, and including it would quarantine tools for changes that do not
// matter.
//
// Canonical means: object keys sorted at every level, no insignificant white space,
// numbers kept as written, no HTML escaping; annotation hints equal to their default
// (a false readOnlyHint or idempotentHint, an unset one) are left out, and annotations
// without any hint are the same as none, so the hash does not depend on how an SDK
// version encodes them. Two definitions that differ only in
// key order or formatting therefore have the same hash. A nil tool or one that cannot
// be encoded is an error, never a hash.
func Hash(t *mcp.Tool) (hash string, canonical json.RawMessage, err error) {
	return HashWithTaskSupport(t, "")
}

// HashWithTaskSupport is [Hash] of a tool listed with execution.taskSupport
// taskSupport (protocol 2026-07-28's tasks extension: "forbidden", "optional" or
// "required"), which the SDK's Tool does not keep: a non-empty taskSupport is part
// of the definition as "execution": {"taskSupport": taskSupport}; an empty one
// leaves the hash exactly [Hash]'s, so pins made before it was kept stay valid.
func HashWithTaskSupport(t *mcp.Tool, taskSupport string) (hash string, canonical json.RawMessage, err error) {
	if t == nil {
		return "", nil, errors.New("definition hash: nil tool")
	}
	raw, err := marshalGuarded(t)
	if err != nil {
		return "", nil, fmt.Errorf("definition hash of tool %q: %w", t.Name, err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return "", nil, fmt.Errorf("definition hash of tool %q: %w", t.Name, err)
	}
	delete(m, "_meta")
	if t.Annotations != nil {
		// The SDK's own encoding of annotations depends on its version and on
		// MCPGODEBUG (hintomitempty); the hash must not. A false bare hint is its
		// default and is left out, like every other absent hint. The conversion stops
		// compiling when the SDK adds a field, so none is silently left unhashed.
		a, err := json.Marshal(pinAnnotations(*t.Annotations))
		if err != nil {
			return "", nil, fmt.Errorf("definition hash of tool %q: %w", t.Name, err)
		}
		var v any
		dec := json.NewDecoder(bytes.NewReader(a))
		dec.UseNumber()
		if err := dec.Decode(&v); err != nil {
			return "", nil, fmt.Errorf("definition hash of tool %q: %w", t.Name, err)
		}
		if obj, ok := v.(map[string]any); ok && len(obj) == 0 {
			delete(m, "annotations") // no hint at all: the same as no annotations
		} else {
			m["annotations"] = v
		}
	}
	if taskSupport != "" {
		m["execution"] = map[string]any{"taskSupport": taskSupport}
	}
	canonical, err = canonicalJSON(m)
	if err != nil {
		return "", nil, fmt.Errorf("definition hash of tool %q: %w", t.Name, err)
	}
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:]), canonical, nil
}

// pinAnnotations is mcp.ToolAnnotations with a fixed encoding: hints at their default
// (absent, or a false bare bool) are left out.
type pinAnnotations struct {
	DestructiveHint *bool  `json:"destructiveHint,omitempty"`
	IdempotentHint  bool   `json:"idempotentHint,omitempty"`
	OpenWorldHint   *bool  `json:"openWorldHint,omitempty"`
	ReadOnlyHint    bool   `json:"readOnlyHint,omitempty"`
	Title           string `json:"title,omitempty"`
}

// marshalGuarded encodes v, turning a panic (a value type the encoder cannot handle,
// a bad MarshalJSON) into an error.
func marshalGuarded(v any) (b []byte, err error) {
	defer func() {
		if r := recover(); r != nil {
			b, err = nil, fmt.Errorf("encoding panicked: %v", r)
		}
	}()
	return json.Marshal(v)
}

// canonicalJSON encodes v (decoded with UseNumber) with sorted keys, no white space
// and no HTML escaping.
func canonicalJSON(v any) (json.RawMessage, error) {
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return json.RawMessage(bytes.TrimSuffix(buf.Bytes(), []byte("\n"))), nil
}

// Check applies pinning to one discovered tool: its governed name, the hash and
// canonical definition from [Hash]. It reports whether the tool must be
// quarantined (hidden from clients and refused with [QuarantineText]).
//
//   - No pin yet: the definition is stored approved (ApprovedBy "first-use"); not
//     quarantined.
//   - The pin's approved hash equals hash: not quarantined, unless the pin is marked
//     not approved. A stale pending definition (the tool changed, then changed back)
//     is cleared.
//   - A different hash: the definition is recorded as the pin's Pending/PendingHash
//     (unless it already is), one [warden.EventDefinitionChanged] event is emitted
//     for each new pending hash (Detail names the old and new hash), and the tool is
//     quarantined until [Approve].
//
// Any error (a store failure, a nil store) comes with quarantined = true: a tool that
// cannot be verified is not served. sink may be nil; a panicking sink is recovered.
// Two processes sharing a store may each emit the event for the same change.
func Check(ctx context.Context, pins Store, sink warden.Sink, name, hash string, def json.RawMessage) (quarantined bool, err error) {
	if pins == nil {
		return true, fmt.Errorf("pin of tool %q: no pin store", name)
	}
	if hash == "" {
		return true, fmt.Errorf("pin of tool %q: empty definition hash", name)
	}
	p, err := pins.GetPin(ctx, name)
	switch {
	case errors.Is(err, store.ErrNotFound):
		np := store.Pin{
			Name:       name,
			Hash:       hash,
			Definition: def,
			Approved:   true,
			ApprovedBy: ApprovedByFirstUse,
			Updated:    time.Now().UTC(),
		}
		if err := pins.PutPin(ctx, np); err != nil {
			return true, fmt.Errorf("storing the first pin of tool %q: %w", name, err)
		}
		return false, nil
	case err != nil:
		return true, fmt.Errorf("reading the pin of tool %q: %w", name, err)
	}

	if p.Hash == hash {
		if p.PendingHash != "" || len(p.Pending) > 0 {
			p.Pending, p.PendingHash, p.Updated = nil, "", time.Now().UTC()
			if err := pins.PutPin(ctx, p); err != nil {
				return true, fmt.Errorf("clearing the stale pending definition of tool %q: %w", name, err)
			}
		}
		return !p.Approved, nil
	}

	if p.PendingHash == hash {
		return true, nil // already recorded and reported
	}
	old := p.Hash
	p.Pending, p.PendingHash, p.Updated = def, hash, time.Now().UTC()
	if err := pins.PutPin(ctx, p); err != nil {
		return true, fmt.Errorf("recording the changed definition of tool %q: %w", name, err)
	}
	fanout.Emit(ctx, nil, sink, warden.Event{
		Name:   warden.EventDefinitionChanged,
		Time:   time.Now(),
		Tool:   name,
		Detail: fmt.Sprintf("tool %q changed its definition since it was approved: %s -> %s; quarantined until an operator approves it", name, old, hash),
	})
	return true, nil
}

// Approve accepts the pending definition of the tool name, but only when its
// PendingHash equals hash: the operator approves exactly the definition they
// reviewed. The pending definition becomes the approved one (Approved true,
// ApprovedBy by) and the approved pin is returned.
//
// Errors: by empty; no pin (wrapping [store.ErrNotFound]); nothing pending
// ([ErrNothingPending]); a different pending hash ([ErrPendingHashMismatch]: the
// definition changed again after the review); a store failure. On error nothing is
// written. The read and the write are not atomic: a change recorded between them by
// another process is overwritten by the approval of the reviewed definition, and
// reported again on that process's next discovery.
func Approve(ctx context.Context, pins Store, name, hash, by string) (store.Pin, error) {
	if pins == nil {
		return store.Pin{}, fmt.Errorf("approving tool %q: no pin store", name)
	}
	if strings.TrimSpace(by) == "" {
		return store.Pin{}, fmt.Errorf("approving tool %q: name who approves", name)
	}
	p, err := pins.GetPin(ctx, name)
	if err != nil {
		if errors.Is(err, store.ErrNotFound) {
			return store.Pin{}, fmt.Errorf("approving tool %q: no pinned definition: %w", name, err)
		}
		return store.Pin{}, fmt.Errorf("approving tool %q: reading its pin: %w", name, err)
	}
	if p.PendingHash == "" {
		return store.Pin{}, fmt.Errorf("approving tool %q: %w (approved %s)", name, ErrNothingPending, p.Hash)
	}
	if p.PendingHash != hash {
		return store.Pin{}, fmt.Errorf("approving tool %q: %w: pending is %s, reviewed was %s; review the definition again", name, ErrPendingHashMismatch, p.PendingHash, hash)
	}
	p.Hash, p.Definition = p.PendingHash, p.Pending
	p.Pending, p.PendingHash = nil, ""
	p.Approved, p.ApprovedBy, p.Updated = true, by, time.Now().UTC()
	if err := pins.PutPin(ctx, p); err != nil {
		return store.Pin{}, fmt.Errorf("approving tool %q: storing its pin: %w", name, err)
	}
	return p, nil
}

// Diff renders a line diff from the approved definition to the pending one of p,
// both pretty-printed as JSON with two-space indentation: each line is prefixed
// "- " (only in the approved), "+ " (only in the pending) or "  " (in both), and ends
// with a newline. It returns "" when nothing is pending. A definition that is not
// valid JSON is shown as its raw text.
func Diff(p store.Pin) string {
	if p.PendingHash == "" && len(p.Pending) == 0 {
		return ""
	}
	a := strings.Split(prettyDefinition(p.Definition), "\n")
	b := strings.Split(prettyDefinition(p.Pending), "\n")
	var sb strings.Builder
	for _, l := range diffLines(a, b) {
		sb.WriteString(l)
		sb.WriteByte('\n')
	}
	return sb.String()
}

// prettyDefinition indents a definition, or returns it as is when it is not JSON.
func prettyDefinition(def json.RawMessage) string {
	if len(bytes.TrimSpace(def)) == 0 {
		return ""
	}
	var buf bytes.Buffer
	if err := json.Indent(&buf, def, "", "  "); err != nil {
		return strings.TrimRight(string(def), "\n")
	}
	return buf.String()
}

// maxDiffCells bounds the longest-common-subsequence table; beyond it the diff shows
// every old line removed and every new line added (still correct, just less helpful).
const maxDiffCells = 4 << 20

// diffLines returns the prefixed lines of a minimal line diff from a to b.
func diffLines(a, b []string) []string {
	n, m := len(a), len(b)
	out := make([]string, 0, n+m)
	if n*m > maxDiffCells {
		for _, l := range a {
			out = append(out, "- "+l)
		}
		for _, l := range b {
			out = append(out, "+ "+l)
		}
		return out
	}
	// lcs[i][j] is the length of the longest common subsequence of a[i:] and b[j:].
	lcs := make([][]int32, n+1)
	for i := range lcs {
		lcs[i] = make([]int32, m+1)
	}
	for i := n - 1; i >= 0; i-- {
		for j := m - 1; j >= 0; j-- {
			if a[i] == b[j] {
				lcs[i][j] = lcs[i+1][j+1] + 1
			} else {
				lcs[i][j] = max(lcs[i+1][j], lcs[i][j+1])
			}
		}
	}
	i, j := 0, 0
	for i < n && j < m {
		switch {
		case a[i] == b[j]:
			out = append(out, "  "+a[i])
			i++
			j++
		case lcs[i+1][j] >= lcs[i][j+1]:
			out = append(out, "- "+a[i])
			i++
		default:
			out = append(out, "+ "+b[j])
			j++
		}
	}
	for ; i < n; i++ {
		out = append(out, "- "+a[i])
	}
	for ; j < m; j++ {
		out = append(out, "+ "+b[j])
	}
	return out
}

// QuarantineText is the exact refusal returned for a quarantined tool:
// "Tool '<name>' changed its definition since it was approved; an operator must
// review it."
func QuarantineText(name string) string {
	return "Tool '" + name + "' changed its definition since it was approved; an operator must review it."
}

// QuarantinedError is returned by [upstream.Server.Call] for a tool whose definition changed
// since it was approved (or could not be verified). Its Error is [QuarantineText].
type QuarantinedError struct {
	// Tool is the governed tool name.
	Tool string
}

// Error returns QuarantineText(e.Tool) exactly.
func (e *QuarantinedError) Error() string { return QuarantineText(e.Tool) }

// HashPrompt returns "sha256:<hex>" of the canonical JSON of a prompt's whole
// definition as listed upstream (name, title, description, arguments, icons and any
// field a later protocol adds, "_meta" left out as for [Hash]), and that canonical
// JSON. A nil prompt or one that cannot be encoded is an error, never a hash.
func HashPrompt(p *mcp.Prompt) (hash string, canonical json.RawMessage, err error) {
	if p == nil {
		return "", nil, errors.New("definition hash: nil prompt")
	}
	return hashDefinition("prompt", p.Name, p)
}

// HashResourceTemplate is [HashPrompt] for a resource template's definition (URI
// template, name, title, description, MIME type, annotations, icons).
func HashResourceTemplate(t *mcp.ResourceTemplate) (hash string, canonical json.RawMessage, err error) {
	if t == nil {
		return "", nil, errors.New("definition hash: nil resource template")
	}
	return hashDefinition("resource template", t.URITemplate, t)
}

// hashDefinition hashes the canonical JSON of v without its "_meta".
func hashDefinition(kind, name string, v any) (string, json.RawMessage, error) {
	raw, err := marshalGuarded(v)
	if err != nil {
		return "", nil, fmt.Errorf("definition hash of %s %q: %w", kind, name, err)
	}
	var m map[string]any
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.UseNumber()
	if err := dec.Decode(&m); err != nil {
		return "", nil, fmt.Errorf("definition hash of %s %q: %w", kind, name, err)
	}
	delete(m, "_meta")
	canonical, err := canonicalJSON(m)
	if err != nil {
		return "", nil, fmt.Errorf("definition hash of %s %q: %w", kind, name, err)
	}
	sum := sha256.Sum256(canonical)
	return "sha256:" + hex.EncodeToString(sum[:]), canonical, nil
}
