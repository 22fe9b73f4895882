package agent_test

import (
	"context"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
)

// inlineChecker is a Synchronous and Interruptible skill checker (as a policy with CEL
// conditions is): the menu calls it inline, but under SkillCheckTimeout.
type inlineChecker struct{ *named }

func (inlineChecker) Synchronous() bool   { return true }
func (inlineChecker) Interruptible() bool { return true }

// A Synchronous checker that is Interruptible gets a deadline: one that answers only
// once its context is done hides the skill instead of holding the run forever.
func TestSkills_InterruptibleMenuCheckHasADeadline(t *testing.T) {
	checker := inlineChecker{&named{name: "skills", governs: []warden.Capability{warden.CapSkillRead}, check: func(ctx context.Context, req warden.Request) (warden.Decision, error) {
		if req.Target == "skill:payroll" {
			if _, ok := ctx.Deadline(); !ok {
				t.Errorf("the menu check of an Interruptible checker has no deadline")
				return warden.Decision{Effect: warden.Deny}, nil
			}
			<-ctx.Done() // answers only after the deadline: too late to count
		}
		return warden.Decision{Effect: warden.Allow}, nil
	}}}
	cat := newCatalogue()
	a, sc := skillWorld(t, cat, nil, checker, say("ok"))
	if _, err := a.Run(context.Background(), "help"); err != nil {
		t.Fatal(err)
	}
	d := readSkillSpec(t, sc.request(t, 0)).Description
	if strings.Contains(d, "payroll") || !strings.Contains(d, "- refunds: ") {
		t.Errorf("menu:\n%s", d)
	}
}
