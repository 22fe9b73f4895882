// Shadow policies: policies evaluated beside the enforcing one, whose verdicts are
// recorded and never change a call. A role's guard checks calls with the enforcing
// policy wrapped in a shadowChecker, which notes every check (the request and the
// enforcing answer) on the call's slot; when the call is journaled (sendJournal), each
// shadow is asked the same questions, and where it is stricter, or fails, the verdict
// goes to the sinks (warden.shadow) and into the call's audit record.
//
// The shadows are asked after the enforcing checks, not during them: a shadow's time
// never counts against the enforcing policy's deadline, so a slow or failing shadow
// cannot turn the enforcing answer into a late-answer fault.

package gateway

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/store"
)

// The sources of shadow verdicts ([store.ShadowVerdict.Source]).
const (
	shadowOwn       = "policy"        // the enforcing file's items marked enforce: false
	shadowCandidate = "shadow_policy" // the gateway's candidate file
)

// shadowTimeout bounds one shadow evaluation of one check. A variable for the tests.
var shadowTimeout = 2 * time.Second

// shadowSource is one shadow policy of a role view.
type shadowSource struct {
	name     string
	checker  warden.Checker
	revision string
}

// loadPolicies loads the enforcing policy and, when the file names one, the candidate.
func loadPolicies(cfg *File) (pol, cand *policy.Policy, err error) {
	if pol, err = policy.LoadFile(cfg.Policy, nil); err != nil {
		return nil, nil, err
	}
	if cfg.ShadowPolicy != "" {
		if cand, err = policy.LoadShadowFile(cfg.ShadowPolicy, nil); err != nil {
			return nil, nil, err
		}
	}
	return pol, cand, nil
}

// candidateViews returns the candidate as each role of views sees it: itself when it
// defines no roles, else with that role active (which must exist in it).
func candidateViews(cand *policy.Policy, views map[string]*policy.Policy, cfg *File) (map[string]*policy.Policy, error) {
	if cand == nil {
		return nil, nil
	}
	out := map[string]*policy.Policy{}
	for role := range views {
		if role == "" || cand.Roles() == nil {
			out[role] = cand
			continue
		}
		p, err := cand.WithActiveRole(role)
		if err != nil {
			return nil, fmt.Errorf("role %q named in %s, in the shadow policy %s: %w", role, cfg.File, cfg.ShadowPolicy, err)
		}
		out[role] = p
	}
	return out, nil
}

// shadowsOf returns the shadows of one role view: the enforcing file's own, then the
// candidate.
func shadowsOf(p, cand *policy.Policy) []shadowSource {
	var out []shadowSource
	if sh := p.Shadow(); sh != nil {
		out = append(out, shadowSource{name: shadowOwn, checker: sh, revision: sh.Revision()})
	}
	if cand != nil {
		out = append(out, shadowSource{name: shadowCandidate, checker: cand, revision: cand.Revision()})
	}
	return out
}

// shadowChecker is a role's enforcing policy with shadows: it answers exactly as the
// policy does, and notes each check on the call's slot for the shadows.
type shadowChecker struct {
	*policy.Policy
	shadows []shadowSource
}

// Check answers with the enforcing policy, and notes the question and the answer.
func (c shadowChecker) Check(ctx context.Context, req warden.Request) (warden.Decision, error) {
	d, err := c.Policy.Check(ctx, req)
	if err != nil {
		return d, err
	}
	if slot, _ := ctx.Value(slotKey{}).(*resultSlot); slot != nil {
		req.Sequence = nil // lent for the check only; no shadow reads it
		slot.noteCheck(shadowCheck{req: req, enforced: d, shadows: c.shadows})
	}
	return d, nil
}

// shadowCheck is one enforcing check, to be asked of the shadows.
type shadowCheck struct {
	req      warden.Request
	enforced warden.Decision
	shadows  []shadowSource
}

// shadowNotes holds the checks of a call's pipeline run not yet asked of the shadows.
// A checker on its own goroutine may note a check while the call goes on, hence the
// lock.
type shadowNotes struct {
	mu     sync.Mutex
	checks []shadowCheck
}

func (s *resultSlot) noteCheck(c shadowCheck) {
	s.notes.mu.Lock()
	s.notes.checks = append(s.notes.checks, c)
	s.notes.mu.Unlock()
}

// takeChecks returns the checks noted since the last take: one pipeline run's (a
// resumed call is checked again, and journaled again).
func (s *resultSlot) takeChecks() []shadowCheck {
	s.notes.mu.Lock()
	defer s.notes.mu.Unlock()
	c := s.notes.checks
	s.notes.checks = nil
	return c
}

// shadowVerdicts asks every shadow the questions of the call's checks and returns one
// verdict per shadow that was stricter than the enforcing answer on some check (the
// strictest, the first among equals) or, failing that, failed on one; each verdict is
// also sent to the sinks as a [warden.EventShadow]. Nothing it does changes the call.
func (g *Gateway) shadowVerdicts(ctx context.Context, checks []shadowCheck, c warden.Call) []store.ShadowVerdict {
	if len(checks) == 0 {
		return nil
	}
	type found struct {
		src   shadowSource
		check *shadowCheck
		d     warden.Decision
		fault string
	}
	var order []string
	best := map[string]*found{}
	for i := range checks {
		ck := &checks[i]
		for _, src := range ck.shadows {
			d, fault := evalShadow(ctx, src.checker, ck.req)
			stricter := fault == "" && d.Effect.Outranks(ck.enforced.Effect)
			if !stricter && fault == "" {
				continue
			}
			cur, seen := best[src.name]
			if !seen {
				order = append(order, src.name)
			}
			switch {
			case !seen:
			case cur.fault != "" && stricter:
			case cur.fault == "" && stricter && d.Effect.Outranks(cur.d.Effect):
			default:
				continue
			}
			best[src.name] = &found{src: src, check: ck, d: d, fault: fault}
		}
	}
	if len(order) == 0 {
		return nil
	}
	now := time.Now()
	out := make([]store.ShadowVerdict, 0, len(order))
	for _, name := range order {
		f := best[name]
		v := store.ShadowVerdict{
			Source: name, Effect: wouldWord(f.d.Effect), Enforced: f.check.enforced.Effect.String(),
			RuleID: f.d.RuleID, Rationale: f.d.Rationale, Reason: f.d.Reason, Revision: f.src.revision,
		}
		if f.fault != "" {
			v.Effect, v.Rationale = "fault", f.fault
		}
		out = append(out, v)
		// Start stays zero: the verdict is not one of the call's pipeline events (it may
		// come after warden.tool.end); CallID ties it to the call.
		g.sink.Emit(ctx, warden.Event{
			Name: warden.EventShadow, Time: now,
			Session: c.Session, Identity: c.Identity, CallID: c.ID, Tool: c.Tool, Revision: v.Revision,
			Checker: name, Capability: f.check.req.Capability, Target: f.check.req.Target,
			Effect: f.d.Effect, RuleID: v.RuleID, Rationale: v.Rationale, Reason: v.Reason,
			Outcome: v.Effect, Detail: v.Enforced, Error: f.fault,
		})
	}
	return out
}

// wouldWord is a stricter shadow effect in words.
func wouldWord(e warden.Effect) string {
	switch e {
	case warden.Halt:
		return "would halt"
	case warden.Deny:
		return "would deny"
	}
	return "would ask"
}

// evalShadow asks one shadow one question under its own deadline (the caller's
// cancellation aside: the call happened). fault is why it gave no answer: an error, a
// panic, an invalid effect, a late answer, or a fault denial of its own (a condition
// that could not be evaluated, or ran over its cost limit or deadline).
func evalShadow(ctx context.Context, c warden.Checker, req warden.Request) (d warden.Decision, fault string) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), shadowTimeout)
	defer cancel()
	defer func() {
		if r := recover(); r != nil {
			d, fault = warden.Decision{Effect: warden.Deny, RuleID: "shadow.panic"}, fmt.Sprintf("shadow policy panicked: %v", r)
		}
	}()
	d, err := c.Check(ctx, req)
	switch {
	case err != nil:
		return warden.Decision{Effect: warden.Deny, RuleID: "shadow.error"}, "shadow policy failed: " + err.Error()
	case ctx.Err() != nil:
		return warden.Decision{Effect: warden.Deny, RuleID: "shadow.timeout"}, fmt.Sprintf("shadow policy did not answer within %s", shadowTimeout)
	case !d.Effect.Valid():
		return warden.Decision{Effect: warden.Deny, RuleID: "shadow.invalid"}, fmt.Sprintf("shadow policy returned an invalid effect %d", d.Effect)
	case d.Fault:
		return d, d.Rationale
	}
	return d, ""
}
