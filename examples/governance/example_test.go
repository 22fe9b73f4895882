package main

// The four shapes of the governance page, pinned: per call, what the model read, what
// operators read, whether save_note executed and how often, and how the run ended.
// Scene 1 pins "zero executions", scene 2 "one", scene 3 "fail-closed, zero executions,
// the operator's error in the rationale, the model carrying on without the tool", and
// scene 4 "the run ending with PolicyHaltError carrying both vocabularies above".
func Example() {
	main()
	// Output:
	// 1. read-only role
	//    check tool_call: allow (readonly.allowlist)
	//    check memory_write: deny (readonly.capabilities.miss)
	//    model read: [permission denied: The 'readonly' role may not exercise 'memory_write', which tool 'save_note' declares.]
	//    operators read: The 'readonly' role may not exercise 'memory_write', which tool 'save_note' declares.
	//    executed: false (executions: 0)
	//    model answered: I may not save notes; please file it yourself.
	// 2. admin role
	//    check tool_call: allow (admin.allowlist)
	//    check memory_write: allow (admin.allowlist)
	//    check user_data: allow (admin.allowlist)
	//    model read: saved
	//    executed: true (executions: 1)
	//    model answered: Saved.
	// 3. authorizer outage
	//    check tool_call: deny (checker.fault)
	//    model read: [permission denied: Tool 'save_note' could not be authorized. This will not change during this run — do not call it again. Continue without it, or say what you are unable to do.]
	//    operators read: permission-checker threw: simulated authorizer outage
	//    executed: false (executions: 0)
	//    model answered: I could not save the note; here it is to file: customer called.
	// 4. halt
	//    check tool_call: halt (no-bulk-export-v3)
	//    model read: That action needs a human approver. Stopping here.
	//    operators read: bulk write outside an approved workflow
	//    executed: false (executions: 0)
	//    run halted: reason security:exfiltration, rule no-bulk-export-v3, model read "That action needs a human approver. Stopping here."
}
