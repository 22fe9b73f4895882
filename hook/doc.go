// Package hook adapts agent command-line tools to Warden through their own hook
// mechanisms, so that one policy file decides their tool calls. Claude Code is the first
// (and so far only) adapter.
//
// # Claude Code
//
// Claude Code runs a command before every tool call (the PreToolUse hook) with one JSON
// object on stdin, and reads one JSON object back that allows, denies or asks. This
// package holds the pieces of that exchange; the command that wires them to a policy is
// `warden hook claude-code` (package hook/cli, which the slim warden-hook binary runs
// too).
//
//   - [ReadClaudeInput] and [ParseClaudeInput] read the hook input strictly: one JSON
//     object, no duplicate keys, a tool_name and an object tool_input.
//   - [MapClaudeTool] maps a Claude Code tool call onto Warden's canonical tools (Bash to
//     bash, Read to reader, Write and Edit to editor, Grep and Glob to search, ...), so
//     the same policy file works for Claude Code, the Go library and the MCP gateway.
//     Relative paths are resolved against the session's working directory.
//   - [ClaudeVerdict] turns a decision into the hook output: allow => allow, deny and
//     halt => deny with what the model should read, ask => ask with a question for the
//     person at the keyboard. [ClaudeRefusal] is the deny for everything that went wrong.
//   - [ResolveClaudeTool] maps the same call with every path resolved on the real
//     filesystem ([ResolvePath]: symbolic links followed as the kernel follows them, a
//     ".." after a link climbing from its target), so that the command can judge both
//     the written and the resolved form and keep the more restrictive answer.
//   - [Protected] is the set of files a running Warden reads (its policy, the Claude Code
//     settings that run the hook, its store, its binary); the command denies any write
//     to them, and any Bash command naming them or a directory holding them other than
//     the working directory and its ancestors ([Protected.CommandReaches]), whatever the
//     policy says.
//   - [MergeClaudeSettings] and [InstallClaudeSettings] add the hook to a
//     .claude/settings.json without touching anything else in it.
//
// # Failing closed
//
// Nothing here guesses. Input that is not one JSON object, has duplicate keys, lacks a
// tool name, carries a tool_input that is not an object, lacks a field a mapped tool
// needs (Bash without a string command, Read without a file_path), names a tool with
// characters Claude Code never uses, or gives a relative path with no absolute working
// directory to resolve it against is an error, and the command turns every error into a
// deny. A path that cannot be resolved (a link loop, a directory that cannot be
// searched) is an error too. A settings file that is not valid JSON is never rewritten.
//
// What is not guaranteed: Claude Code opens a path itself after the hook answered, so a
// link another process swaps in between is not seen; a Grep or Glob is judged by the
// directory it searches (resolved), not by each file below it, so a link further down
// is followed or not as the tool itself decides; and a program a Bash rule lets run
// can write any file it can reach, whatever its arguments say. The guarantee that does
// not depend on either is that the hook refuses a policy inside the project directory
// unless it was installed with --policy-in-project.
package hook
