package hook

// This file maps Claude Code's tools onto Warden's canonical tools.

import (
	"fmt"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden"
)

// Call is a tool call in Warden's vocabulary: the tool name a policy judges and its
// arguments in order.
type Call struct {
	Tool string
	Args warden.Args
}

// fieldKind says how one input field becomes a canonical argument.
type fieldKind uint8

const (
	required fieldKind = iota // a string that must be present
	filePath                  // a path that must be present; resolved against cwd
	dirPath                   // an optional path; resolved against cwd, cwd when absent
)

// field moves the input field from to the canonical argument to.
type field struct {
	from, to string
	kind     fieldKind
}

// claudeTool is how one Claude Code tool maps onto a canonical tool.
type claudeTool struct {
	tool   string  // canonical tool name
	fields []field // canonical arguments first, in this order
	action string  // when set, an "action" argument after the fields
}

// claudeTools is the mapping table. Every other tool is judged under its lower-cased
// name with its input as it is (MCP tools, mcp__<server>__<tool>, keep their name).
var claudeTools = map[string]claudeTool{
	"Bash":         {tool: "bash", fields: []field{{"command", "command", required}}},
	"Read":         {tool: "reader", fields: []field{{"file_path", "path", filePath}}},
	"Write":        {tool: "editor", fields: []field{{"file_path", "file_path", filePath}}, action: "write"},
	"Edit":         {tool: "editor", fields: []field{{"file_path", "file_path", filePath}}, action: "edit"},
	"MultiEdit":    {tool: "editor", fields: []field{{"file_path", "file_path", filePath}}, action: "edit"},
	"NotebookEdit": {tool: "editor", fields: []field{{"notebook_path", "file_path", filePath}}, action: "edit"},
	"Grep":         {tool: "search", fields: []field{{"pattern", "pattern", required}, {"path", "path", dirPath}}},
	"Glob":         {tool: "search", fields: []field{{"pattern", "pattern", required}, {"path", "path", dirPath}}},
	"WebFetch":     {tool: "web_fetch", fields: []field{{"url", "url", required}}},
	"WebSearch":    {tool: "web_search", fields: []field{{"query", "query", required}}},
}

// MCPToolPrefix starts the name of every MCP tool in Claude Code: mcp__<server>__<tool>.
const MCPToolPrefix = "mcp__"

// MapClaudeTool maps a call to the Claude Code tool name with the given input onto
// Warden's canonical tools, so that one policy file judges Claude Code and every other
// front end alike. cwd is the session's working directory; relative paths are resolved
// against it.
//
//	Bash{command}                  => bash {command}
//	Read{file_path}                => reader {path}
//	Write{file_path}               => editor {file_path, action: "write"}
//	Edit, MultiEdit{file_path}     => editor {file_path, action: "edit"}
//	NotebookEdit{notebook_path}    => editor {file_path: notebook_path, action: "edit"}
//	Grep, Glob{pattern, path}      => search {pattern, path} (path defaults to cwd)
//	WebFetch{url}                  => web_fetch {url}
//	WebSearch{query}               => web_search {query}
//	mcp__<server>__<tool>          => the same name, input unchanged
//	any other tool                 => its lower-cased name, input unchanged
//
// The canonical arguments come first, in the order shown; every other input field
// follows in input order (a Write keeps its content, a WebFetch its prompt), except the
// fields that were renamed and any field that would collide with a canonical argument.
// Paths (file_path, notebook_path, Grep's and Glob's path) are cleaned, and a relative
// path is joined to cwd. A Glob's path is the directory its pattern reaches: path joined
// with the pattern's leading directories that hold no wildcard ("src/**/*.go" from
// /w reaches /w/src), or those directories alone for an absolute pattern ("/etc/*"
// reaches /etc).
//
// MapClaudeTool is pure: it reads no file and no environment. It returns an error, and
// no call, when the tool name is empty or holds a character outside letters, digits,
// '_', '-' and '.'; when a field the mapping needs is missing or not a string; when a
// path is empty or starts with '~'; and when a path is relative (or Grep's or Glob's path
// is missing) and cwd is not absolute; and when a Glob pattern has a ".." after a
// wildcard (where it leads depends on what the wildcard matched).
func MapClaudeTool(name string, input warden.Args, cwd string) (Call, error) {
	return mapClaudeTool(name, input, cwd, false)
}

// ResolveClaudeTool maps a call like [MapClaudeTool], except that every path (and a
// Glob's reach) is the file it names on the real filesystem, resolved with
// [ResolvePath] from its written form joined to cwd before any cleaning: a ".." after
// a symbolic link climbs from where the link leads, as it does when the tool opens the
// path ("link/../x" with link => /etc is /x, not cwd/x). It reads the filesystem (only
// metadata and links). A path that cannot be resolved is an error.
func ResolveClaudeTool(name string, input warden.Args, cwd string) (Call, error) {
	return mapClaudeTool(name, input, cwd, true)
}

func mapClaudeTool(name string, input warden.Args, cwd string, resolve bool) (Call, error) {
	if err := checkToolName(name); err != nil {
		return Call{}, err
	}
	t, ok := claudeTools[name]
	if !ok {
		return Call{Tool: ClaudeToolName(name), Args: input}, nil
	}
	var args warden.Args
	consumed := map[string]bool{}
	for _, f := range t.fields {
		v, err := fieldValue(name, input, f, cwd, resolve)
		if err != nil {
			return Call{}, err
		}
		consumed[f.from] = true
		args = args.With(f.to, v)
	}
	if name == "Glob" {
		// Judge the directory the pattern reaches, not only the one it starts in:
		// "/etc/*" or "../../*" would list files outside path.
		pattern, _ := args.String("pattern")
		dir, _ := args.String("path")
		reach, err := globReach(pattern, dir)
		if err != nil {
			return Call{}, fmt.Errorf("%s tool_input.pattern: %w", name, err)
		}
		if resolve {
			// dir is resolved already; the pattern's leading directories are walked
			// from it as the tool walks them.
			if reach, err = ResolvePath(globRawReach(pattern, dir)); err != nil {
				return Call{}, fmt.Errorf("%s tool_input.pattern: %w", name, err)
			}
		}
		args = args.With("path", reach)
	}
	if t.action != "" {
		args = args.With("action", t.action)
	}
	for k, v := range input.Fields() {
		if consumed[k] {
			continue
		}
		if _, taken := args.Get(k); taken {
			// The canonical argument wins; a stray input field of the same name
			// must not change what the policy judges.
			continue
		}
		args = args.With(k, v)
	}
	return Call{Tool: t.tool, Args: args}, nil
}

// ClaudeToolName returns the tool name [MapClaudeTool] gives a call to the Claude Code
// tool name: "bash" for "Bash", "reader" for "Read", an MCP tool's own name, the
// lower-cased name of any other tool. It does not check the name.
func ClaudeToolName(name string) string {
	if t, ok := claudeTools[name]; ok {
		return t.tool
	}
	if strings.HasPrefix(name, MCPToolPrefix) {
		return name
	}
	return strings.ToLower(name)
}

// fieldValue returns the canonical value of one mapped field.
func fieldValue(tool string, input warden.Args, f field, cwd string, resolve bool) (string, error) {
	v, present := input.Get(f.from)
	if !present || v == nil {
		switch f.kind {
		case dirPath:
			// Claude Code searches the working directory when no path is given.
			if !filepath.IsAbs(cwd) {
				return "", fmt.Errorf("%s has no path and the working directory %q is not absolute, so what it searches is unknown", tool, cwd)
			}
			if resolve {
				return ResolvePath(cwd)
			}
			return filepath.Clean(cwd), nil
		}
		return "", fmt.Errorf("%s tool_input has no %s", tool, f.from)
	}
	s, ok := v.(string)
	if !ok {
		return "", fmt.Errorf("%s tool_input.%s must be a string, not %s", tool, f.from, jsonKind(v))
	}
	if f.kind == required {
		return s, nil
	}
	p, err := resolvePath(s, cwd)
	if err != nil {
		return "", fmt.Errorf("%s tool_input.%s: %w", tool, f.from, err)
	}
	if resolve {
		raw := s
		if !filepath.IsAbs(s) {
			raw = cwd + string(filepath.Separator) + s
		}
		if p, err = ResolvePath(raw); err != nil {
			return "", fmt.Errorf("%s tool_input.%s: %w", tool, f.from, err)
		}
	}
	return p, nil
}

// globRawReach is [globReach] without cleaning: dir and the pattern's leading
// directories that hold no wildcard, joined as written, for [ResolvePath]. The pattern
// has been checked by globReach.
func globRawReach(pattern, dir string) string {
	segs := strings.Split(filepath.ToSlash(pattern), "/")
	static := 0
	for static < len(segs)-1 && !strings.ContainsAny(segs[static], "*?[{") {
		static++
	}
	lead := filepath.FromSlash(strings.Join(segs[:static], "/"))
	if filepath.IsAbs(pattern) {
		return string(filepath.Separator) + lead
	}
	return dir + string(filepath.Separator) + lead
}

// resolvePath returns p cleaned, joined to cwd when it is relative.
func resolvePath(p, cwd string) (string, error) {
	switch {
	case p == "":
		return "", fmt.Errorf("the path is empty")
	case strings.HasPrefix(p, "~"):
		// The tool may expand it to a home directory the policy cannot see; judging it
		// as a relative path would judge another file.
		return "", fmt.Errorf("path %q starts with '~'; use an absolute path", p)
	case filepath.IsAbs(p):
		return filepath.Clean(p), nil
	case !filepath.IsAbs(cwd):
		return "", fmt.Errorf("path %q is relative and the working directory %q is not absolute", p, cwd)
	}
	return filepath.Join(cwd, p), nil
}

// globReach returns the directory a glob pattern searched from dir (absolute) can reach:
// dir joined with the pattern's leading directories that hold no wildcard, or those
// directories alone for an absolute pattern. A ".." after a wildcard is an error: where
// it leads depends on what the wildcard matched.
func globReach(pattern, dir string) (string, error) {
	segs := strings.Split(filepath.ToSlash(pattern), "/")
	static := 0 // leading directory segments without wildcards
	for static < len(segs)-1 && !strings.ContainsAny(segs[static], "*?[{") {
		static++
	}
	for _, s := range segs[static:] {
		if s == ".." {
			return "", fmt.Errorf("%q climbs with '..' after a wildcard; give the directory as path", pattern)
		}
	}
	// A brace group may expand to another directory altogether ("{..,x}/etc/*",
	// "{/etc,/root}/*"): a group holding "/", "..", "~" or another group is refused,
	// since where it reaches cannot be judged from the text (fail closed).
	if err := checkBraces(pattern); err != nil {
		return "", err
	}
	lead := filepath.FromSlash(strings.Join(segs[:static], "/"))
	if filepath.IsAbs(pattern) {
		return filepath.Clean(string(filepath.Separator) + lead), nil
	}
	return filepath.Join(dir, lead), nil
}

// checkBraces refuses brace groups whose alternatives could leave the directory the
// pattern names.
func checkBraces(pattern string) error {
	depth, start := 0, 0
	for i, r := range pattern {
		switch r {
		case '{':
			if depth > 0 {
				return fmt.Errorf("%q nests brace groups; give the directory as path", pattern)
			}
			depth, start = 1, i
		case '}':
			if depth == 0 {
				continue
			}
			depth = 0
			group := pattern[start : i+1]
			if strings.ContainsAny(group, "/~\\") || strings.Contains(group, "..") {
				return fmt.Errorf("%q has a brace group %s that can leave its directory; give the directory as path", pattern, group)
			}
		}
	}
	return nil
}

// maxToolName bounds a tool name; Claude Code's are far shorter.
const maxToolName = 256

// checkToolName refuses names Claude Code never sends. Besides catching garbage, it keeps
// a name from reading as something else to the policy, such as a skill target
// ("skill:<id>").
func checkToolName(name string) error {
	if name == "" {
		return fmt.Errorf("tool_name is empty")
	}
	if len(name) > maxToolName {
		return fmt.Errorf("tool_name is %d bytes long, over the %d-byte limit", len(name), maxToolName)
	}
	for _, r := range name {
		if !(r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_' || r == '-' || r == '.') {
			return fmt.Errorf("tool_name %q holds %q; tool names are letters, digits, '_', '-' and '.'", name, r)
		}
	}
	return nil
}

// jsonKind names the JSON type of a decoded value, for errors.
func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case string:
		return "a string"
	case bool:
		return "a boolean"
	case warden.Args:
		return "an object"
	case warden.Array:
		return "an array"
	}
	return "a number"
}
