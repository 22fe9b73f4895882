// completion/complete as a judged request: the value being completed is judged as
// part of the prompts/get or resources/read it would become, and audited, before it
// is sent to the upstream.

package gateway

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"slices"
	"time"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
	"github.com/modelcontextprotocol/go-sdk/mcp"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	"github.com/wardenhq/warden/upstream"
)

// completionToolPrefix prefixes the audit name of a completion: the record of a
// completion for the prompt <name> is "completion:prompt:<name>", for a template
// (or resource) of server "completion:resource:<server>".
const completionToolPrefix = "completion:"

// noCompletion is the answer to a completion the gateway refuses (by policy, in a
// halted session, for an argument the prompt or template does not take): no values,
// as from a server with nothing to offer, so nothing tells which rule refused it.
// The audit log records why.
func noCompletion() *mcp.CompleteResult {
	return &mcp.CompleteResult{Completion: mcp.CompletionResultDetails{Values: []string{}}}
}

// completion is one completion request as the gateway judges it.
type completion struct {
	up     *upstream.Server
	target string          // "prompt:<name>" or "resource:<server>"
	args   json.RawMessage // what is judged and recorded
	params mcp.CompleteParams
	// names are the argument names the reference takes; known false for a reference
	// nobody serves (or the caller cannot see).
	names []string
	known bool
	// why is, for a reference the caller cannot see, why (for the audit log only;
	// "" when nothing is recorded).
	why   string
	notIt error // the answer when !known
	// expanded is the URI a template expanded to ("" for a prompt or a listed
	// resource).
	expanded string
	kind     string // "prompt", "resource template" or "resource", for a reason
}

// complete serves a completion/complete for a prompt or a resource template the
// caller may see, as a judged request: the caller's role policy judges it as getting
// that prompt ("prompt:<name>" with the context's arguments and the argument being
// completed) or reading through that template ("resource:<server>" with the URI the
// template expands to with the context's values and the one being completed; RFC
// 6570 leaves a variable without a value out). Only an allow sends it upstream (with
// the prompt's upstream name): a deny, an ask (no person is asked for a completion;
// the get or read itself asks) and a halt (which does not halt the session: nothing
// was sent) answer no values, as does a halted session or an argument the prompt or
// template does not take. Every completion of a reference the caller may see is in
// the audit log as a call to "completion:<target>" (ran, refused with the stage and
// why, or failed); a reference the caller cannot see answers exactly like one that
// does not exist.
func (g *Gateway) complete(ctx context.Context, f *front, req *mcp.CompleteRequest) (*mcp.CompleteResult, error) {
	if !g.enter() {
		return nil, refused(shuttingDownText)
	}
	defer g.inflight.Done()
	st := g.state.Load()
	cl, err := f.identifyRequest(st, req)
	if err != nil {
		return nil, refused(err.Error())
	}
	if req.Params == nil || req.Params.Ref == nil {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: "completion/complete needs a ref"}
	}
	session := f.sessionOf(req.Session, cl)
	id := warden.Identity{Tenant: cl.Tenant, Principal: cl.Principal}
	values := completionValues(req.Params)
	var c completion
	switch ref := req.Params.Ref; ref.Type {
	case "ref/prompt":
		c = promptCompletion(st, cl, req.Params, values)
	case "ref/resource":
		c = resourceCompletion(ctx, st, cl, req.Params, values)
	default:
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidParams, Message: fmt.Sprintf("unknown completion reference type %q: use ref/prompt or ref/resource", ref.Type)}
	}
	rec := store.CallRecord{Session: session, Tool: completionToolPrefix + c.target, Identity: id, Status: warden.StatusRefused}
	refuse := func(stage warden.Stage, reason string) (*mcp.CompleteResult, error) {
		rec.Stage, rec.Reason = stage, reason
		g.record(ctx, st, rec, c.args)
		return noCompletion(), nil
	}
	if _, halted := g.haltedText(f, req.Session, cl); halted {
		// Any reference, served or not: a halted session learns nothing more.
		if c.target == "" {
			return noCompletion(), nil
		}
		return refuse(warden.StageGate, haltedReason)
	}
	if !c.known {
		if c.why != "" {
			rec.Stage, rec.Reason = warden.StageLookup, c.why
			g.record(ctx, st, rec, c.args)
		}
		return nil, c.notIt
	}
	for _, name := range slices.Sorted(maps.Keys(values)) {
		if !slices.Contains(c.names, name) {
			return refuse(warden.StageValidation, fmt.Sprintf("completion argument %q is not one the %s takes", name, c.kind))
		}
	}
	if c.expanded != "" {
		// A URI read through a template must be in normal form (see unnormalURI).
		if why := unnormalURI(c.expanded); why != "" {
			return refuse(warden.StageValidation, "resource URI not in normal form: "+why)
		}
	}
	args, err := warden.ParseArgs(c.args)
	if err != nil {
		return refuse(warden.StageValidation, err.Error())
	}
	d := judge(ctx, st, cl, c.target, args)
	rec.RuleID, rec.Rationale = d.RuleID, d.Rationale
	if d.Effect != warden.Allow {
		rec.Effect = d.Effect.String()
		return refuse(warden.StagePermission, d.Reason)
	}
	t0 := time.Now()
	res, err := c.up.Complete(ctx, &c.params)
	rec.Duration, rec.Executed = time.Since(t0), true
	if err != nil {
		rec.Status, rec.Stage, rec.Reason = warden.StatusFailed, warden.StageExecute, "upstream completion failed: "+err.Error()
		rec.Executed = !upstreamNotSent(err)
		g.record(ctx, st, rec, c.args)
		return nil, refused("Completion failed: " + err.Error())
	}
	rec.Status = warden.StatusRan
	g.record(ctx, st, rec, c.args)
	return res, nil
}

// completionValues returns the values a completion request knows: the context's
// arguments and the argument being completed (which wins over a context value of the
// same name).
func completionValues(p *mcp.CompleteParams) map[string]string {
	values := map[string]string{}
	if p.Context != nil {
		for k, v := range p.Context.Arguments {
			values[k] = v
		}
	}
	values[p.Argument.Name] = p.Argument.Value
	return values
}

// promptCompletion resolves a completion of a prompt's argument for cl.
func promptCompletion(st *gatewayState, cl Client, p *mcp.CompleteParams, values map[string]string) completion {
	name := p.Ref.Name
	raw, _ := json.Marshal(values)
	c := completion{target: upstream.PromptTarget(name), args: raw, params: *p, kind: "prompt"}
	if ok, why := visiblePrompt(st, cl, name); !ok {
		c.why, c.notIt = why, unknownPrompt(name)
		if why == "" {
			c.target = "" // nobody serves it: nothing is recorded
		}
		return c
	}
	gp := st.cat.prompts[name]
	c.up, c.known = gp.up, true
	if gp.prompt.Prompt != nil {
		for _, a := range gp.prompt.Prompt.Arguments {
			c.names = append(c.names, a.Name)
		}
	}
	r := *p.Ref
	r.Name = gp.prompt.Remote
	c.params.Ref = &r
	return c
}

// resourceCompletion resolves a completion of a resource template's variable for
// cl: the template of a server cl may read (the first in server order), else a
// listed resource cl is shown (which has no variables to complete).
func resourceCompletion(ctx context.Context, st *gatewayState, cl Client, p *mcp.CompleteParams, values map[string]string) completion {
	uri := p.Ref.URI
	c := completion{params: *p, notIt: mcp.ResourceNotFoundError(uri), kind: "resource template"}
	var hiddenFrom, quarantined string
	for _, gt := range st.cat.templates {
		if gt.tmpl.URITemplate != uri {
			continue
		}
		if gt.tmpl.Quarantined {
			quarantined = gt.tmpl.Server
			continue
		}
		if !mayRead(st, cl, gt.tmpl.Server) {
			if hiddenFrom == "" {
				hiddenFrom = gt.tmpl.Server
			}
			continue
		}
		expanded, err := gt.tmpl.Expand(values)
		if err != nil {
			// Not one the SDK would have listed; answered as unknown, never sent.
			c.target, c.args = upstream.ResourceTarget(gt.tmpl.Server), uriArgs(uri)
			c.why = "resource template cannot be expanded: " + err.Error()
			return c
		}
		c.up, c.known, c.names, c.expanded = gt.up, true, gt.tmpl.Variables(), expanded
		c.target, c.args = upstream.ResourceTarget(gt.tmpl.Server), uriArgs(expanded)
		return c
	}
	if r, ok := st.cat.resources[uri]; ok && hiddenFrom == "" {
		c.target, c.args = upstream.ResourceTarget(r.res.Server), uriArgs(uri)
		switch {
		case !mayRead(st, cl, r.res.Server):
			hiddenFrom = r.res.Server
		case !resourceListed(ctx, st, cl, r.res):
			c.why = "resource hidden from the caller: the policy denies reading it"
			return c
		default:
			// Shown, but it has no variables: any argument is refused.
			c.up, c.known, c.kind = r.up, true, "resource"
			return c
		}
	}
	switch {
	case hiddenFrom != "":
		c.target, c.args = upstream.ResourceTarget(hiddenFrom), uriArgs(uri)
		c.why = fmt.Sprintf("resources hidden from the caller: not allowed to role %q", cl.Role)
	case quarantined != "":
		c.target, c.args = upstream.ResourceTarget(quarantined), uriArgs(uri)
		c.why = "resource template definition changed since it was approved"
	}
	return c
}

// upstreamNotSent reports whether err says the request never reached the upstream.
func upstreamNotSent(err error) bool {
	return errors.Is(err, upstream.ErrNotSent)
}
