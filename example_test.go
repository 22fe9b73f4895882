package warden_test

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/policy"
)

// Register a tool, bind a rule policy to the registry, and call the tool through the
// Guard. Refusals are data: the Outcome says what the model reads and whether the tool
// executed.
func ExampleGuard_Call() {
	rules, err := policy.NewRules(policy.RuleConfig{
		Allow: map[string][]string{"reader": {"/workspace/*"}},
		Deny:  map[string][]string{"reader": {"*.env"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	var reg warden.Registry
	err = reg.Register(warden.Executable{
		Tool: warden.Tool{Name: "reader", Description: "Read a file."},
		Run: func(_ context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			path, _ := args.String("path")
			return "contents of " + path, nil
		},
	})
	if err != nil {
		log.Fatal(err)
	}
	guard, err := reg.Bind(warden.Config{Checkers: []warden.Checker{rules}})
	if err != nil {
		log.Fatal(err)
	}
	for _, path := range []string{"/workspace/main.go", "/workspace/.env", "/etc/passwd"} {
		args, _ := warden.NewArgs("path", path)
		out, err := guard.Call(context.Background(), warden.Call{Tool: "reader", Args: args})
		if err != nil {
			log.Fatal(err)
		}
		fmt.Printf("%s (executed=%v): %s\n", out.Status, out.Executed, out.ModelText)
	}
	// Output:
	// ran (executed=true): contents of /workspace/main.go
	// refused (executed=false): [permission denied: denied by rule: *.env]
	// refused (executed=false): [permission denied: no matching rule, default deny]
}

// Middleware may rewrite a call's arguments, with a reason. The permission checkers
// then judge the call again, on the arguments that will actually run: a transform
// cannot turn an allowed call into a denied one.
func ExampleMiddleware() {
	rules, err := policy.NewRules(policy.RuleConfig{
		Allow: map[string][]string{"bash": {"echo *"}},
		Deny:  map[string][]string{"bash": {"rm *"}},
	})
	if err != nil {
		log.Fatal(err)
	}
	rewrite := &warden.Middleware{
		Name: "cleanup",
		OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
			return warden.TransformCall(c.Args.With("command", "rm -rf /tmp/important"), "tidy up first")
		},
	}
	var reg warden.Registry
	_ = reg.Register(warden.Executable{
		Tool: warden.Tool{Name: "bash"},
		Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
			panic("never runs")
		},
	})
	guard, err := reg.Bind(warden.Config{Checkers: []warden.Checker{rules}, Middleware: []*warden.Middleware{rewrite}})
	if err != nil {
		log.Fatal(err)
	}
	out, _ := guard.Call(context.Background(), warden.Call{Tool: "bash", Args: warden.MustParseArgs(`{"command":"echo ok"}`)})
	for _, c := range out.Checks {
		fmt.Printf("%s: %s by %q\n", c.Pass, c.Decision.Effect, c.Decision.RuleID)
	}
	fmt.Printf("ledger: %s changed=%v why=%q\n", out.Ledger[0].Middleware, out.Ledger[0].Changed, out.Ledger[0].Why)
	fmt.Printf("%s at %s: %s\n", out.Status, out.Stage, out.ModelText)
	// Output:
	// s1: allow by "echo *"
	// s2: deny by "rm *"
	// ledger: cleanup changed=true why="tidy up first"
	// refused at final_check: [permission denied: denied by rule: rm *]
}

// A middleware that asks a person pauses the call. The pending decision is plain JSON:
// store it, show it to someone, and resume the call (on this Guard or on one bound in
// another process) with their answer.
func ExampleGuard_Resume() {
	approval := &warden.Middleware{
		Name: "payments-approval",
		OnToolCall: func(_ context.Context, c warden.ToolCall) warden.CallOutcome {
			return warden.AskPerson("Send this payment?", "amount over the daily limit")
		},
	}
	var reg warden.Registry
	_ = reg.Register(warden.Executable{
		Tool: warden.Tool{Name: "pay"},
		Run: func(_ context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			return "paid " + string(args.AppendJSON(nil)), nil
		},
	})
	guard, err := reg.Bind(warden.Config{Ungoverned: true, Middleware: []*warden.Middleware{approval}, CanPause: true})
	if err != nil {
		log.Fatal(err)
	}
	// who is the program's own knowledge of the caller (its authentication, its run),
	// never read back from a stored decision.
	who := warden.Caller{Identity: warden.Identity{Principal: "agent-7"}, Session: "s-42"}
	out, _ := guard.Call(context.Background(), warden.Call{Tool: "pay", Args: warden.MustParseArgs(`{"to":"acme","amount":5000}`), Identity: who.Identity, Session: who.Session})
	fmt.Println(out.Status, out.Executed, out.Pending.Kind, out.Pending.Question)

	stored, _ := json.Marshal(out.Pending) // e.g. into a database
	var pending warden.PendingDecision
	if err := json.Unmarshal(stored, &pending); err != nil {
		log.Fatal(err)
	}
	out, err = guard.Resume(context.Background(), pending, warden.Approved{By: "alice", Digest: pending.ApprovalDigest()}, who)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(out.Status, out.Executed, out.ModelText)
	// Output:
	// pending false ask Send this payment?
	// ran true paid {"to":"acme","amount":5000}
}

// A checker that halts ends the run: Call returns a *PolicyHaltError that carries the
// machine reason (for alerts) apart from what the model read.
func ExamplePolicyHaltError() {
	guardrail := warden.CheckerFunc(func(_ context.Context, req warden.Request) (warden.Decision, error) {
		return warden.Decision{
			Effect:    warden.Halt,
			RuleID:    "no-bulk-export-v3",
			Reason:    "security:exfiltration",
			Rationale: "bulk write to a customer record outside an approved workflow",
			TellLLM:   "That action needs a human approver. Stopping here and handing off.",
		}, nil
	})
	var reg warden.Registry
	_ = reg.Register(warden.Executable{
		Tool: warden.Tool{Name: "export_customers"},
		Run:  func(context.Context, warden.Args, *warden.Credential) (any, error) { panic("never runs") },
	})
	guard, err := reg.Bind(warden.Config{Checkers: []warden.Checker{guardrail}})
	if err != nil {
		log.Fatal(err)
	}
	out, err := guard.Call(context.Background(), warden.Call{Tool: "export_customers", Args: warden.MustParseArgs(`{"all":true}`)})
	var halt *warden.PolicyHaltError
	if errors.As(err, &halt) {
		fmt.Println("reason:", halt.Reason)
		fmt.Println("rule:", halt.RuleID)
		fmt.Println("model read:", halt.TellLLM)
		fmt.Println("executed:", out.Executed)
	}
	// Output:
	// reason: security:exfiltration
	// rule: no-bulk-export-v3
	// model read: That action needs a human approver. Stopping here and handing off.
	// executed: false
}

// The session gate is asked before anything else. A refusal is a tool-shaped error the
// model can read; the tool is not invoked.
func ExampleGateFunc() {
	gate := warden.GateFunc(func(_ context.Context, inv warden.Invocation) (bool, error) {
		return inv.Function != "rm", nil
	})
	var reg warden.Registry
	for _, name := range []string{"ls", "rm"} {
		_ = reg.Register(warden.Executable{
			Tool: warden.Tool{Name: name},
			Run: func(context.Context, warden.Args, *warden.Credential) (any, error) {
				return name + " ran", nil
			},
		})
	}
	guard, err := reg.Bind(warden.Config{Ungoverned: true, Gate: gate})
	if err != nil {
		log.Fatal(err)
	}
	for _, name := range []string{"ls", "rm"} {
		out, _ := guard.Call(context.Background(), warden.Call{Tool: name, Args: warden.MustParseArgs(`{}`), Session: "s-1"})
		fmt.Printf("%s: %s\n", name, out.ModelText)
	}
	// Output:
	// ls: ls ran
	// rm: {"error":"denied by governance gate","function":"rm"}
}
