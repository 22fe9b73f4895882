// The upstream's own multi-round trips, relayed to a 2026-07-28 client. When an
// upstream's own call answers input_required, the
// gateway passes its input requests to a 2026-07-28 client and must get the
// upstream's requestState back on the retry without the client changing it or
// replaying it against another call. So the upstream's state travels inside the
// gateway's own: MAC'd with the store's requestState key under a tag of its own (an
// approval state is never taken for a relay state, nor the reverse), bound to the
// principal, the governed name, the arguments' digest, the definition hash and the
// policy revision of the round that asked, expiring, and used once (claimed in the
// store, like an approval state; each later round issues a new one). The ids and
// kinds of the input requests passed on are in it too: only answers to those, of
// the kind asked, are forwarded.

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
	"slices"
	"strings"
	"time"

	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// relayVersion is the format of a relay state.
const relayVersion = 1

// relayCall is the call a relayed round belongs to, as the gateway judged it.
type relayCall struct {
	Tool     string      // the governed name ("prompt:..." for a prompt)
	Args     warden.Args // the client's arguments
	Def      string      // the definition hash of what is called
	Revision string      // the policy revision the round was judged under
}

// relayClaims is what a relay state vouches for.
type relayClaims struct {
	V         int               `json:"v"`
	Nonce     string            `json:"n"`
	Tenant    string            `json:"t"`
	Principal string            `json:"p"`
	Tool      string            `json:"tool"`
	Args      string            `json:"a"` // warden.Args.Digest
	Def       string            `json:"d"`
	Revision  string            `json:"r"`
	Expires   int64             `json:"exp"`
	Upstream  string            `json:"u,omitempty"` // the upstream's requestState
	Inputs    map[string]string `json:"in"`          // input request id -> method
	// Approved is the approval binding (ApprovalBinding) of the human decision that
	// let the round run, and ApprovedBy who gave it ("" for a call that needed none):
	// the later rounds of the same call are that call, and are not asked again.
	Approved   string `json:"ap,omitempty"`
	ApprovedBy string `json:"apb,omitempty"`
	// ApprovedUntil (Unix seconds) ends the carry-over: the approval lasts
	// mrtrStateTTL from when it was given, however many rounds follow.
	ApprovedUntil int64 `json:"apu,omitempty"`
}

func relayMAC(key []byte, payload string) []byte {
	m := hmac.New(sha256.New, key)
	m.Write([]byte("warden-mrtr-relay-v1\x00"))
	m.Write([]byte(payload))
	return m.Sum(nil)
}

// answers reports whether resp is an answer of the kind method asks for.
func answers(method string, resp mcp.InputResponse) bool {
	switch resp.(type) {
	case *mcp.ElicitResult:
		return method == "elicitation/create"
	case *mcp.CreateMessageWithToolsResult, *mcp.CreateMessageResult: //lint:ignore SA1019 upstreams still ask for sampling
		return method == "sampling/createMessage"
	case *mcp.ListRootsResult: //lint:ignore SA1019 upstreams still ask for roots
		return method == "roots/list"
	}
	return false
}

// issueRelayState records and signs the state of a relayed round of cl's call c:
// the upstream asked requests and gave upstreamState.
func (g *Gateway) issueRelayState(ctx context.Context, cl Client, c relayCall, requests mcp.InputRequestMap, upstreamState string, approval relayApproval) (string, error) {
	inputs := make(map[string]string, len(requests))
	for id, r := range requests {
		m := upstream.InputMethod(r)
		if m == "" {
			return "", fmt.Errorf("input request %q is of a kind (%T) the gateway does not relay", id, r)
		}
		inputs[id] = m
	}
	key, err := g.macKey(ctx, false)
	if err != nil {
		return "", err
	}
	var nonce [16]byte
	rand.Read(nonce[:])
	claims := relayClaims{
		V: relayVersion, Nonce: hex.EncodeToString(nonce[:]),
		Tenant: cl.Tenant, Principal: cl.Principal,
		Tool: c.Tool, Args: c.Args.Digest(), Def: c.Def, Revision: c.Revision,
		Expires:  time.Now().Add(mrtrStateTTL).Unix(),
		Upstream: upstreamState, Inputs: inputs,
		Approved: approval.binding, ApprovedBy: approval.by, ApprovedUntil: approval.until,
	}
	raw, err := json.Marshal(claims)
	if err != nil {
		return "", err
	}
	// The same prefix as approval states: the same sweep removes them.
	if err := g.opts.Store.PutCheckpoint(ctx, mrtrStatePrefix+claims.Nonce, raw); err != nil {
		return "", err
	}
	payload := base64.RawURLEncoding.EncodeToString(raw)
	return payload + "." + base64.RawURLEncoding.EncodeToString(relayMAC(key, payload)), nil
}

// Texts of a relayed retry that is refused; nothing is forwarded for any of them.
const (
	relayTamperedText  = "The requestState of this retry is not valid: it was changed, or it was not issued by this gateway for a relayed question. Nothing was forwarded; call again without it to be asked again."
	relayReplayedText  = "This requestState was already used. Nothing was forwarded; call again to be asked again."
	relayPrincipalText = "The requestState of this retry was issued to another principal. Nothing was forwarded."
)

// openRelayState checks the state of a relayed retry of cl's call c, as judged now,
// and claims it (once). It returns the upstream's requestState and the answers to
// forward: exactly the ids the round asked, each of the kind asked (extra answers
// are dropped). Any mismatch returns the refusal text instead, and nothing may be
// forwarded.
func (g *Gateway) openRelayState(ctx context.Context, cl Client, c relayCall, state string, responses mcp.InputResponseMap) (upstreamState string, forward mcp.InputResponseMap, approval relayApproval, refusal string) {
	claims, ok, err := g.verifyRelayState(ctx, state)
	switch {
	case err != nil:
		g.log.Error("cannot read the requestState key; the relayed retry is refused", "error", err)
		return "", nil, approval, mrtrStoreText
	case !ok:
		return "", nil, approval, relayTamperedText
	case time.Now().Unix() > claims.Expires:
		return "", nil, approval, fmt.Sprintf("The question of this retry expired at %s. Nothing was forwarded; call again to be asked again.", time.Unix(claims.Expires, 0).UTC().Format(time.RFC3339))
	case claims.Tenant != cl.Tenant || claims.Principal != cl.Principal:
		return "", nil, approval, relayPrincipalText
	case claims.Tool != c.Tool || claims.Args != c.Args.Digest():
		return "", nil, approval, fmt.Sprintf("The requestState of this retry was issued for another call (%s, not this call of %s with these arguments). Nothing was forwarded; call again to be asked about this one.", claims.Tool, c.Tool)
	case claims.Def != c.Def:
		return "", nil, approval, fmt.Sprintf("The definition of %s changed since this question was asked. Nothing was forwarded; call again to be asked about the current one.", c.Tool)
	case claims.Revision != c.Revision:
		return "", nil, approval, fmt.Sprintf("The policy changed since this question was asked (revision %s, now %s). Nothing was forwarded; call again to be judged under the current policy.", claims.Revision, c.Revision)
	}
	forward = make(mcp.InputResponseMap, len(claims.Inputs))
	var missing []string
	for id, method := range claims.Inputs {
		resp, ok := responses[id]
		if !ok || resp == nil || !answers(method, resp) {
			missing = append(missing, fmt.Sprintf("%s (%s)", id, method))
			continue
		}
		forward[id] = resp
	}
	if len(missing) > 0 {
		slices.Sort(missing)
		return "", nil, approval, "The retry does not answer every question it was asked: no answer of the kind asked for " + strings.Join(missing, ", ") + ". Nothing was forwarded; call again to be asked again."
	}
	claim, _ := json.Marshal(map[string]string{"claimed_by": cl.Principal, "relayed": c.Tool})
	if _, err := g.opts.Store.ClaimCheckpoint(ctx, mrtrStatePrefix+claims.Nonce, claim); err != nil {
		switch {
		case errors.Is(err, store.ErrAlreadyClaimed):
			return "", nil, approval, relayReplayedText
		case errors.Is(err, store.ErrNotFound):
			return "", nil, approval, relayTamperedText
		}
		g.log.Error("cannot claim a relayed requestState; the retry is refused", "error", err)
		return "", nil, approval, mrtrStoreText
	}
	if claims.Approved != "" && time.Now().Unix() <= claims.ApprovedUntil {
		approval = relayApproval{binding: claims.Approved, by: claims.ApprovedBy, until: claims.ApprovedUntil}
	}
	return claims.Upstream, forward, approval, ""
}

// verifyRelayState checks a relay state's signature and format and returns its
// claims.
func (g *Gateway) verifyRelayState(ctx context.Context, state string) (relayClaims, bool, error) {
	payload, sig, ok := strings.Cut(state, ".")
	if !ok {
		return relayClaims{}, false, nil
	}
	got, err := base64.RawURLEncoding.DecodeString(sig)
	if err != nil {
		return relayClaims{}, false, nil
	}
	for _, refresh := range []bool{false, true} {
		key, err := g.macKey(ctx, refresh)
		if err != nil {
			return relayClaims{}, false, err
		}
		if !hmac.Equal(got, relayMAC(key, payload)) {
			continue
		}
		raw, err := base64.RawURLEncoding.DecodeString(payload)
		if err != nil {
			return relayClaims{}, false, nil
		}
		var c relayClaims
		if json.Unmarshal(raw, &c) != nil || c.V != relayVersion || c.Nonce == "" || len(c.Inputs) == 0 {
			return relayClaims{}, false, nil
		}
		return c, true, nil
	}
	return relayClaims{}, false, nil
}
