// Package scripted is a model provider that answers from a script: deterministic replies
// for tests, demos and users' own tests of their policies.
//
// A script reads as the conversation it drives:
//
//	p := scripted.New(
//		scripted.Call("c1", "read_file", `{"path":"notes.txt"}`),
//		scripted.Calls(
//			scripted.ToolCall{ID: "c2", Name: "search", Args: `{"q":"refunds"}`},
//			scripted.ToolCall{ID: "c3", Name: "refund", Args: `{"amount":20}`},
//		),
//		scripted.Text("Done."),
//	)
//
// Guarantees:
//
//   - Each [Provider.Complete] returns the next reply, in order, as a deep copy (the
//     caller may modify it without changing the script). When the replies are used up it
//     returns an error wrapping [ErrNoReply]:
//     "scripted provider: no reply left (N replies scripted, call N+1)".
//   - Every request received is recorded as a deep copy, in order, including the one
//     that found the script exhausted; [Provider.Requests] returns copies, so tests can
//     assert what the model was shown (system prompt, tools offered, tool results).
//   - A call whose ctx is already done returns ctx.Err(), consumes no reply and is not
//     recorded.
//   - [Func] builds a provider whose every reply is computed from the request.
//   - A Provider is safe for concurrent use.
//   - Helpers panic on tool arguments that are not valid JSON: a real provider never
//     hands the agent such arguments (see package provider/openai), so a script should not.
package scripted
