package hook_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/hook"
)

// TestMapClaudeTool covers every row of the mapping table, path resolution, and the
// inputs the mapping refuses.
func TestMapClaudeTool(t *testing.T) {
	const cwd = "/home/dev/proj"
	tests := []struct {
		name     string
		tool     string
		input    string
		cwd      string // default cwd
		wantTool string
		wantArgs string // compact JSON, in order
	}{
		// Bash
		{"bash", "Bash", `{"command":"git status","description":"Show status","timeout":5000}`, "", "bash", `{"command":"git status","description":"Show status","timeout":5000}`},
		{"bash empty command is judged, not dropped", "Bash", `{"command":""}`, "", "bash", `{"command":""}`},
		// Read
		{"read absolute", "Read", `{"file_path":"/etc/hosts","offset":10,"limit":20}`, "", "reader", `{"path":"/etc/hosts","offset":10,"limit":20}`},
		{"read relative", "Read", `{"file_path":"src/main.go"}`, "", "reader", `{"path":"/home/dev/proj/src/main.go"}`},
		{"read cleaned", "Read", `{"file_path":"/home/dev/proj/../../../etc//passwd"}`, "", "reader", `{"path":"/etc/passwd"}`},
		{"read relative climbing out", "Read", `{"file_path":"../../.ssh/id_rsa"}`, "", "reader", `{"path":"/home/.ssh/id_rsa"}`},
		{"read stray path field loses to the canonical one", "Read", `{"path":"/ok","file_path":"/etc/shadow"}`, "", "reader", `{"path":"/etc/shadow"}`},
		// Write, Edit, MultiEdit, NotebookEdit
		{"write", "Write", `{"file_path":"/home/dev/proj/a.go","content":"package a"}`, "", "editor", `{"file_path":"/home/dev/proj/a.go","action":"write","content":"package a"}`},
		{"write relative", "Write", `{"file_path":"./b/../a.go","content":""}`, "", "editor", `{"file_path":"/home/dev/proj/a.go","action":"write","content":""}`},
		{"edit", "Edit", `{"file_path":"/home/dev/proj/a.go","old_string":"x","new_string":"y","replace_all":false}`, "", "editor", `{"file_path":"/home/dev/proj/a.go","action":"edit","old_string":"x","new_string":"y","replace_all":false}`},
		{"edit with a stray action field", "Edit", `{"action":"read","file_path":"/a"}`, "", "editor", `{"file_path":"/a","action":"edit"}`},
		{"multiedit", "MultiEdit", `{"file_path":"a.go","edits":[{"old_string":"x","new_string":"y"}]}`, "", "editor", `{"file_path":"/home/dev/proj/a.go","action":"edit","edits":[{"old_string":"x","new_string":"y"}]}`},
		{"notebookedit", "NotebookEdit", `{"notebook_path":"nb/a.ipynb","cell_id":"c1","new_source":"print(1)","edit_mode":"replace"}`, "", "editor", `{"file_path":"/home/dev/proj/nb/a.ipynb","action":"edit","cell_id":"c1","new_source":"print(1)","edit_mode":"replace"}`},
		// Grep, Glob
		{"grep", "Grep", `{"pattern":"TODO","path":"/home/dev/proj/src","output_mode":"content","-i":true}`, "", "search", `{"pattern":"TODO","path":"/home/dev/proj/src","output_mode":"content","-i":true}`},
		{"grep relative path", "Grep", `{"path":"src","pattern":"TODO"}`, "", "search", `{"pattern":"TODO","path":"/home/dev/proj/src"}`},
		{"grep without path searches cwd", "Grep", `{"pattern":"func main","glob":"*.go"}`, "", "search", `{"pattern":"func main","path":"/home/dev/proj","glob":"*.go"}`},
		{"grep null path searches cwd", "Grep", `{"pattern":"x","path":null}`, "/home/dev/proj/", "search", `{"pattern":"x","path":"/home/dev/proj"}`},
		{"glob", "Glob", `{"pattern":"**/*.go","path":"/srv"}`, "", "search", `{"pattern":"**/*.go","path":"/srv"}`},
		{"glob without path", "Glob", `{"pattern":"**/*.go"}`, "", "search", `{"pattern":"**/*.go","path":"/home/dev/proj"}`},
		{"glob reaches its leading directories", "Glob", `{"pattern":"src/internal/**/*.go"}`, "", "search", `{"pattern":"src/internal/**/*.go","path":"/home/dev/proj/src/internal"}`},
		{"glob of one file", "Glob", `{"pattern":"go.mod","path":"/srv"}`, "", "search", `{"pattern":"go.mod","path":"/srv"}`},
		{"glob absolute pattern", "Glob", `{"pattern":"/etc/ssh/*","path":"/home/dev/proj"}`, "", "search", `{"pattern":"/etc/ssh/*","path":"/etc/ssh"}`},
		{"glob absolute pattern at the root", "Glob", `{"pattern":"/*"}`, "", "search", `{"pattern":"/*","path":"/"}`},
		{"glob climbing before the wildcard", "Glob", `{"pattern":"../../.ssh/*"}`, "", "search", `{"pattern":"../../.ssh/*","path":"/home/.ssh"}`},
		{"glob braces are wildcards", "Glob", `{"pattern":"{a,b}/x/*"}`, "", "search", `{"pattern":"{a,b}/x/*","path":"/home/dev/proj"}`},
		// Web
		{"webfetch keeps the url first", "WebFetch", `{"prompt":"summarize","url":"https://go.dev/doc"}`, "", "web_fetch", `{"url":"https://go.dev/doc","prompt":"summarize"}`},
		{"websearch", "WebSearch", `{"query":"golang fnmatch","allowed_domains":["go.dev"]}`, "", "web_search", `{"query":"golang fnmatch","allowed_domains":["go.dev"]}`},
		// MCP tools keep their name and their input.
		{"mcp", "mcp__github__create_issue", `{"repo":"a/b","title":"t","labels":["x"]}`, "", "mcp__github__create_issue", `{"repo":"a/b","title":"t","labels":["x"]}`},
		{"mcp keeps case", "mcp__Memory__Read_Graph", `{}`, "", "mcp__Memory__Read_Graph", `{}`},
		// Any other tool: its lower-cased name, its input unchanged.
		{"other", "TodoWrite", `{"todos":[{"content":"x","status":"pending"}]}`, "", "todowrite", `{"todos":[{"content":"x","status":"pending"}]}`},
		{"other task", "Task", `{"description":"d","prompt":"p","subagent_type":"general-purpose"}`, "", "task", `{"description":"d","prompt":"p","subagent_type":"general-purpose"}`},
		{"other keeps relative paths as they are", "LS", `{"path":"src"}`, "", "ls", `{"path":"src"}`},
		{"tool names are case-sensitive: bash is not Bash", "bash", `{"command":"ls"}`, "", "bash", `{"command":"ls"}`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			dir := cwd
			if tt.cwd != "" {
				dir = tt.cwd
			}
			got, err := hook.MapClaudeTool(tt.tool, warden.MustParseArgs(tt.input), dir)
			if err != nil {
				t.Fatalf("MapClaudeTool(%q, %s): %v", tt.tool, tt.input, err)
			}
			if name := hook.ClaudeToolName(tt.tool); name != got.Tool {
				t.Errorf("ClaudeToolName(%q) = %q, MapClaudeTool gives %q", tt.tool, name, got.Tool)
			}
			if got.Tool != tt.wantTool {
				t.Errorf("tool = %q, want %q", got.Tool, tt.wantTool)
			}
			if gotArgs := string(got.Args.AppendJSON(nil)); gotArgs != tt.wantArgs {
				t.Errorf("args = %s\n        want %s", gotArgs, tt.wantArgs)
			}
		})
	}
}

// TestMapClaudeToolRefuses checks the inputs the mapping cannot judge.
func TestMapClaudeToolRefuses(t *testing.T) {
	tests := []struct {
		tool, input, cwd string
		wantErr          string
	}{
		{"", `{}`, "/w", "tool_name is empty"},
		{"skill:payroll", `{}`, "/w", `tool_name "skill:payroll" holds ':'`},
		{"Bash ", `{"command":"ls"}`, "/w", `holds ' '`},
		{strings.Repeat("a", 257), `{}`, "/w", "over the 256-byte limit"},
		{"Bash", `{}`, "/w", "Bash tool_input has no command"},
		{"Bash", `{"command":null}`, "/w", "Bash tool_input has no command"},
		{"Bash", `{"command":["rm","-rf","/"]}`, "/w", "Bash tool_input.command must be a string, not an array"},
		{"Read", `{"path":"/etc/passwd"}`, "/w", "Read tool_input has no file_path"},
		{"Read", `{"file_path":""}`, "/w", "the path is empty"},
		{"Read", `{"file_path":"~/.ssh/id_rsa"}`, "/w", `starts with '~'`},
		{"Read", `{"file_path":"a.go"}`, "", `path "a.go" is relative and the working directory "" is not absolute`},
		{"Read", `{"file_path":"a.go"}`, "w", `is not absolute`},
		{"Write", `{"file_path":7}`, "/w", "Write tool_input.file_path must be a string, not a number"},
		{"Edit", `{"old_string":"a"}`, "/w", "Edit tool_input has no file_path"},
		{"MultiEdit", `{"file_path":true}`, "/w", "must be a string, not a boolean"},
		{"NotebookEdit", `{"file_path":"/w/a.ipynb"}`, "/w", "NotebookEdit tool_input has no notebook_path"},
		{"Grep", `{"path":"/w"}`, "/w", "Grep tool_input has no pattern"},
		{"Grep", `{"pattern":"x","path":{}}`, "/w", "must be a string, not an object"},
		{"Glob", `{"pattern":"*"}`, "", "Glob has no path and the working directory"},
		{"Glob", `{"pattern":"*/../../etc/*"}`, "/w", `"*/../../etc/*" climbs with '..' after a wildcard`},
		{"Glob", `{"pattern":"**/.."}`, "/w", "climbs with '..' after a wildcard"},
		{"Glob", `{"pattern":"{..,x}/{..,x}/etc/*"}`, "/w", "can leave its directory"},
		{"Glob", `{"pattern":"{/etc,/root}/*"}`, "/w", "can leave its directory"},
		{"Glob", `{"pattern":"src/{..,x}"}`, "/w", "can leave its directory"},
		{"Glob", `{"pattern":"{a,{b,c}}/*"}`, "/w", "nests brace groups"},
		{"WebFetch", `{"prompt":"p"}`, "/w", "WebFetch tool_input has no url"},
		{"WebSearch", `{"q":"x"}`, "/w", "WebSearch tool_input has no query"},
	}
	for _, tt := range tests {
		t.Run(tt.tool+" "+tt.input, func(t *testing.T) {
			got, err := hook.MapClaudeTool(tt.tool, warden.MustParseArgs(tt.input), tt.cwd)
			if err == nil {
				t.Fatalf("MapClaudeTool(%q, %s, %q) = %+v, want an error", tt.tool, tt.input, tt.cwd, got)
			}
			if !strings.Contains(err.Error(), tt.wantErr) {
				t.Errorf("error = %q, want it to contain %q", err, tt.wantErr)
			}
			if got.Tool != "" || got.Args.Len() != 0 {
				t.Errorf("a refusal returned a call: %+v", got)
			}
		})
	}
}

// TestMapClaudeToolDoesNotChangeInput checks that the caller's input is left as it was.
func TestMapClaudeToolDoesNotChangeInput(t *testing.T) {
	in := warden.MustParseArgs(`{"file_path":"a.go","content":"x"}`)
	before := string(in.AppendJSON(nil))
	if _, err := hook.MapClaudeTool("Write", in, "/w"); err != nil {
		t.Fatal(err)
	}
	if after := string(in.AppendJSON(nil)); after != before {
		t.Errorf("input changed: %s, was %s", after, before)
	}
}
