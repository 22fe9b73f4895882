// Human decisions for clients of protocol 2026-07-28, which has no server-to-client
// requests: a call that needs its client's user answers with a multi-round-trip
// result (input_required) holding one elicitation and a requestState the client
// echoes on its retry. The state is the gateway's signed word of what was asked:
// MAC'd with a key kept in the store (so any replica verifies it), bound to the
// principal, the call (governed name, kind, arguments) and the definition and policy
// revision it was judged under, expiring, and usable once (claimed in the store).

package gateway

import (
	"context"
	"crypto/hmac"
	"crypto/rand"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"sync"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

const (
	// mrtrInputID is the id of the gateway's one input request in an input_required
	// result; the retry's inputResponses must answer it.
	mrtrInputID = "warden_approval"
	// mrtrKeyCheckpoint is the store checkpoint holding the requestState MAC key.
	mrtrKeyCheckpoint = "warden.mrtr.key"
	// mrtrStatePrefix prefixes the checkpoint of each issued requestState (by nonce):
	// the retry claims it, so a state is used once.
	mrtrStatePrefix = "warden.mrtr.state:"
	// mrtrStateTTL is how long a requestState may be answered.
	mrtrStateTTL = 10 * time.Minute
	// mrtrVersion is the format of the state.
	mrtrVersion = 1
)

// mrtrContext is what a request on the stateless front brings to a human decision:
// the retry's requestState and inputResponses (empty on a first request), and
// whether the client declared elicitation in this request.
type mrtrContext struct {
	state     string
	responses mcp.InputResponseMap
	canElicit bool
}

// mrtrAsk is the input_required answer a call gets instead of a result.
type mrtrAsk struct {
	requests mcp.InputRequestMap
	state    string
}

// mrtrClaims is what a requestState vouches for.
type mrtrClaims struct {
	V         int    `json:"v"`
	Nonce     string `json:"n"`
	Tenant    string `json:"t"`
	Principal string `json:"p"`
	Tool      string `json:"tool"`
	Binding   string `json:"b"`   // ApprovalBinding: identity, tool, kind, asker, arguments
	Def       string `json:"d"`   // the definition hash of what is called ("" for none)
	Revision  string `json:"r"`   // the policy revision that asked
	Expires   int64  `json:"exp"` // Unix seconds
}

// mrtrKeys caches the MAC key read from the store.
type mrtrKeys struct {
	mu  sync.Mutex
	key []byte
}

// macKey returns the requestState MAC key: the one in the store, made (32 random
// bytes) when there is none. The store creates it once (CreateCheckpoint), so replicas
// that make it at the same moment all get the same key. refresh reads it again.
func (g *Gateway) macKey(ctx context.Context, refresh bool) ([]byte, error) {
	k := &g.mrtrKeys
	k.mu.Lock()
	defer k.mu.Unlock()
	if k.key != nil && !refresh {
		return k.key, nil
	}
	s := g.opts.Store
	key, err := s.GetCheckpoint(ctx, mrtrKeyCheckpoint)
	if errors.Is(err, store.ErrNotFound) {
		fresh := make([]byte, 32)
		rand.Read(fresh)
		key, err = s.CreateCheckpoint(ctx, mrtrKeyCheckpoint, fresh)
	}
	if err != nil {
		return nil, err
	}
	if len(key) < 32 {
		return nil, fmt.Errorf("the requestState key in the store (checkpoint %s) is %d bytes; it must be at least 32", mrtrKeyCheckpoint, len(key))
	}
	k.key = key
	return key, nil
}

func mrtrMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("warden-mrtr-v1\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// issueState records and signs a requestState for the pending decision p of cl's
// call, judged under revision with the definition def.
func (g *Gateway) issueState(ctx context.Context, cl Client, p *warden.PendingDecision, def, revision string) (string, error) {
	key, err := g.macKey(ctx, false)
	if err != nil {
		return "", err
	}
	var nonce [16]byte
	rand.Read(nonce[:])
	c := mrtrClaims{
		V: mrtrVersion, Nonce: hex.EncodeToString(nonce[:]),
		Tenant: cl.Tenant, Principal: cl.Principal,
		Tool: p.Tool, Binding: ApprovalBinding(warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}, p), Def: def, Revision: revision,
		Expires: time.Now().Add(mrtrStateTTL).Unix(),
	}
	raw, err := json.Marshal(c)
	if err != nil {
		return "", err
	}
	if err := g.opts.Store.PutCheckpoint(ctx, mrtrStatePrefix+c.Nonce, raw); err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + base64.RawURLEncoding.EncodeToString(mrtrMAC(key, payload)), nil
}

// Texts of a retry whose requestState is refused. Nothing runs for any of them.
const (
	mrtrTamperedText  = "The requestState of this retry is not valid: it was changed, or it was not issued by this gateway. Nothing ran; call again without it to be asked again."
	mrtrReplayedText  = "This approval was already used. Nothing ran; call again to be asked again."
	mrtrPrincipalText = "The requestState of this retry was issued to another principal. Nothing ran."
	mrtrNoAnswerText  = "The retry does not answer the approval question (inputResponses has no " + mrtrInputID + " elicitation result). Nothing ran; call again to be asked again."
	mrtrStoreText     = "The approval store is unavailable, so this call cannot be approved now. Nothing ran; try again later."
)

// verifyState checks a requestState's signature and format and returns its claims.
func (g *Gateway) verifyState(ctx context.Context, state string) (mrtrClaims, bool, error) {
	payload, sig, ok := strings.Cut(state, ".")
	if !ok {
		return mrtrClaims{}, false, nil
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return mrtrClaims{}, false, nil
	}
	for _, refresh := range []bool{false, true} {
		key, err := g.macKey(ctx, refresh)
		if err != nil {
			return mrtrClaims{}, false, err
		}
		if hmac.Equal(got, mrtrMAC(key, payload)) {
			raw, err := base64.RawURLEncoding.DecodeString(payload)
			if err != nil {
				return mrtrClaims{}, false, nil
			}
			var c mrtrClaims
			if json.Unmarshal(raw, &c) != nil || c.V != mrtrVersion || c.Nonce == "" {
				return mrtrClaims{}, false, nil
			}
			return c, true, nil
		}
	}
	return mrtrClaims{}, false, nil
}

// mrtrDecide carries the pending decision p of a call on the stateless front by
// multi-round trip. On a first request it issues the question (slot.ask) and no
// answer. On a retry it checks the requestState against this call as judged now
// (same principal, call, definition and policy revision; not expired), claims it in
// the store (once) and returns the client's answer; any mismatch refuses with the
// text saying why.
func (g *Gateway) mrtrDecide(ctx context.Context, cl Client, p *warden.PendingDecision, revision string, slot *resultSlot) (warden.Answer, string) {
	m := slot.mrtr
	if m.state == "" {
		token, err := g.issueState(ctx, cl, p, slot.def, revision)
		if err != nil {
			g.log.Error("cannot issue a requestState; the call is refused", "tool", p.Tool, "error", err)
			return nil, mrtrStoreText
		}
		slot.ask = &mrtrAsk{
			requests: mcp.InputRequestMap{mrtrInputID: &mcp.ElicitParams{
				Message:         ElicitationMessage(p),
				RequestedSchema: json.RawMessage(`{"type":"object","properties":{}}`),
			}},
			state: token,
		}
		return nil, ""
	}
	c, ok, err := g.verifyState(ctx, m.state)
	switch {
	case err != nil:
		g.log.Error("cannot read the requestState key; the call is refused", "error", err)
		return nil, mrtrStoreText
	case !ok:
		return nil, mrtrTamperedText
	case time.Now().Unix() > c.Expires:
		return nil, fmt.Sprintf("The approval question of this retry expired at %s. Nothing ran; call again to be asked again.", time.Unix(c.Expires, 0).UTC().Format(time.RFC3339))
	case c.Tenant != cl.Tenant || c.Principal != cl.Principal:
		return nil, mrtrPrincipalText
	case c.Tool != p.Tool || c.Binding != ApprovalBinding(warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}, p):
		return nil, fmt.Sprintf("The requestState of this retry was issued for another call (%s, not this call of %s with these arguments). Nothing ran; call again to be asked about this one.", c.Tool, p.Tool)
	case c.Def != slot.def:
		return nil, fmt.Sprintf("The definition of %s changed since this approval was asked. Nothing ran; call again to be asked about the current one.", p.Tool)
	case c.Revision != revision:
		return nil, fmt.Sprintf("The policy changed since this approval was asked (revision %s, now %s). Nothing ran; call again to be asked under the current policy.", c.Revision, revision)
	}
	res, ok := m.responses[mrtrInputID].(*mcp.ElicitResult)
	if !ok || res == nil {
		return nil, mrtrNoAnswerText
	}
	claim, _ := json.Marshal(map[string]string{"claimed_by": cl.Principal, "action": res.Action})
	if _, err := g.opts.Store.ClaimCheckpoint(ctx, mrtrStatePrefix+c.Nonce, claim); err != nil {
		if errors.Is(err, store.ErrAlreadyClaimed) {
			return nil, mrtrReplayedText
		}
		if errors.Is(err, store.ErrNotFound) {
			return nil, mrtrTamperedText
		}
		g.log.Error("cannot claim a requestState; the call is refused", "error", err)
		return nil, mrtrStoreText
	}
	if res.Action == "accept" {
		return warden.Approved{By: cl.Principal, Note: "approved by the client's user (multi-round trip)", Digest: p.ApprovalDigest()}, ""
	}
	return warden.Declined{By: cl.Principal, Note: "the client's user chose " + res.Action}, ""
}
