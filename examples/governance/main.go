// Command governance runs the four shapes of the governance page against Warden's API.
// The page: "examples/features/03-permissions.ts runs all four shapes on this page in
// one deterministic, key-free file":
//
//  1. "a read-only role passing the tool-name allowlist and still failing the
//     memory_write capability the tool declares — zero executions;"
//  2. "an admin role clearing tool_call, memory_write and user_data — one;"
//  3. "a checker throwing simulated authorizer outage — fail-closed, zero executions,
//     the operator's error in the rationale, the model carrying on without the tool;"
//  4. "a halt decision — the run ending with PolicyHaltError carrying both
//     vocabularies above."
//
// Every scene is one agent run: a scripted model (no key, no network) calls save_note,
// a tool that declares memory_write and user_data, and then answers. The output is
// what the model read, whether the tool ran, what operators read, and how the run
// ended. Run it with: go run ./examples/governance
//
// Where this differs from the page: the model is scripted, so "the model carrying on
// without the tool" (scene 3) shows that the loop calls the model again after the
// refusal; the words of its answer are the script's, not an adaptation. None of the four
// shapes puts a question to a person, so nothing here is approved; a middleware ask is
// shown by warden's ExampleGuard_Resume and by `warden demo`.
package main

import (
	"context"
	"errors"
	"fmt"
	"log"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/policy"
	"github.com/wardenhq/warden/provider/scripted"
	"github.com/wardenhq/warden/schema"
)

func main() {
	// One role policy; capability rules make it govern all four tool capabilities.
	readonly, err := policy.FromRoles(
		map[string][]string{"readonly": {"save_note"}, "admin": {"save_note"}},
		"readonly",
		&policy.RoleRules{Capabilities: map[string][]warden.Capability{
			"readonly": {warden.CapMemoryRead},
			"admin":    {warden.CapMemoryWrite, warden.CapUserData},
		}},
	)
	check(err)
	// "withActiveRole(role) returns a new policy for a different caller."
	admin, err := readonly.WithActiveRole("admin")
	check(err)

	// "a checker that threw is treated as deny-by-default"
	outage := warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{}, errors.New("simulated authorizer outage")
	})
	// The page's halt decision, both vocabularies on one decision.
	exfiltration := warden.CheckerFunc(func(context.Context, warden.Request) (warden.Decision, error) {
		return warden.Decision{
			Effect:    warden.Halt,
			RuleID:    "no-bulk-export-v3",
			Reason:    "security:exfiltration",
			Rationale: "bulk write outside an approved workflow",
			TellLLM:   "That action needs a human approver. Stopping here.",
		}, nil
	})

	scene("1. read-only role", readonly, "I may not save notes; please file it yourself.")
	scene("2. admin role", admin, "Saved.")
	scene("3. authorizer outage", outage, "I could not save the note; here it is to file: customer called.")
	scene("4. halt", exfiltration, "") // the run ends at the halt: the model is not asked again
}

// scene runs one agent whose Guard asks checker about every call, and prints what
// happened.
func scene(title string, checker warden.Checker, answer string) {
	fmt.Println(title)
	executions := 0
	var reg warden.Registry
	check(reg.Register(warden.Executable{
		Tool: warden.Tool{
			Name:         "save_note",
			Description:  "Save a note to the customer's record.",
			InputSchema:  []byte(`{"type":"object","properties":{"note":{"type":"string"}},"required":["note"]}`),
			Capabilities: []warden.Capability{warden.CapMemoryWrite, warden.CapUserData}, // the tool's half
		},
		Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
			executions++
			return "saved", nil
		},
	}))
	events := &warden.Recorder{} // operators' view: the permission events
	guard, err := reg.Bind(warden.Config{
		Checkers: []warden.Checker{checker},
		Schemas:  schema.Compiler{},
		Sinks:    []warden.Sink{events},
	})
	check(err)

	replies := []agent.ModelResponse{scripted.Call("c1", "save_note", `{"note":"customer called"}`)}
	if answer != "" {
		replies = append(replies, scripted.Text(answer))
	}
	a, err := agent.New(scripted.New(replies...), guard, nil)
	check(err)
	res, err := a.Run(context.Background(), "Note that the customer called.")

	for _, c := range res.Calls {
		for _, k := range c.Checks {
			fmt.Printf("   check %s: %s (%s)\n", k.Capability, k.Decision.Effect, k.Decision.RuleID)
		}
		fmt.Printf("   model read: %s\n", c.ModelText)
		for _, e := range events.Named(warden.EventPermissionCheck) {
			if e.CallID == c.ID && e.Effect != warden.Allow {
				fmt.Printf("   operators read: %s\n", e.Rationale) // the event, never the model
			}
		}
		fmt.Printf("   executed: %v (executions: %d)\n", c.Executed, executions)
	}
	if halt, ok := errors.AsType[*warden.PolicyHaltError](err); ok {
		fmt.Printf("   run halted: reason %s, rule %s, model read %q\n", halt.Reason, halt.RuleID, halt.TellLLM)
		return
	}
	check(err)
	fmt.Printf("   model answered: %s\n", res.Answer)
}

func check(err error) {
	if err != nil {
		log.Fatal(err)
	}
}
