package policy_test

import (
	"context"
	"testing"

	"github.com/wardenhq/warden"
)

// git's command-running configuration is refused by the bash check unless the policy
// opts in with shell: {allow_git_config: true}; the opt-in is part of the revision, and
// it only lifts the shell check: the rules still judge the command and what it wraps.
func TestShellAllowGitConfig(t *testing.T) {
	const rules = "version: 1\nrules:\n  allow: {bash: [\"git *\"]}\n"
	strict := parse(t, rules)
	optIn := parse(t, rules+"shell: {allow_git_config: true}\n")
	explicitOff := parse(t, rules+"shell: {allow_git_config: false}\n")

	if strict.Revision() == optIn.Revision() {
		t.Fatal("the opt-in does not change the revision")
	}
	if strict.Revision() != explicitOff.Revision() {
		t.Fatal("allow_git_config: false changes the revision of the strictest policy")
	}

	check := func(p interface {
		Check(context.Context, warden.Request) (warden.Decision, error)
	}, command string) warden.Decision {
		t.Helper()
		args, err := warden.NewArgs("command", command)
		if err != nil {
			t.Fatal(err)
		}
		d, err := p.Check(context.Background(), warden.Request{Capability: warden.CapToolCall, Target: "bash", Args: args})
		if err != nil {
			t.Fatal(err)
		}
		return d
	}
	for _, command := range []string{
		"git -c alias.x='!touch pwned' x",
		"git -c core.pager='touch pwned' log",
		"git --config-env=core.pager=EVIL log",
		"git config core.fsmonitor 'touch pwned'",
	} {
		if d := check(strict, command); d.Effect != warden.Deny || d.RuleID != "shell.control" {
			t.Errorf("strict %q: %v %q, want the shell-control deny", command, d.Effect, d.RuleID)
		}
		if d := check(explicitOff, command); d.Effect != warden.Deny || d.RuleID != "shell.control" {
			t.Errorf("allow_git_config false %q: %v %q, want the shell-control deny", command, d.Effect, d.RuleID)
		}
	}
	if d := check(strict, "git status"); d.Effect != warden.Allow {
		t.Errorf("strict git status: %v %q", d.Effect, d.Rationale)
	}
	if d := check(optIn, "git -c color.ui=never log"); d.Effect != warden.Allow {
		t.Errorf("opt-in git -c color.ui=never log: %v %q, want allow by git *", d.Effect, d.Rationale)
	}
	// The opt-in lifts only the shell check: the rest of the command is still judged.
	if d := check(optIn, "git -c x=y log; rm -rf /"); d.Effect != warden.Deny || d.RuleID != "shell.control" {
		t.Errorf("opt-in with a control operator: %v %q", d.Effect, d.RuleID)
	}
}
