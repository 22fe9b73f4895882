package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"io/fs"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/wardenhq/warden/checkpoint"
	"github.com/wardenhq/warden/runfile"
	"github.com/wardenhq/warden/store"
)

// runFixture copies testdata/run (agent configurations, policies, a workspace) into a
// temporary directory, so runs may write there, and returns that directory.
func runFixture(t *testing.T) string {
	t.Helper()
	dst := t.TempDir()
	src := filepath.Join("testdata", "run")
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		b, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(target, b, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dst
}

// execWardenEnv runs the built binary with exactly the given extra environment on top
// of a minimal one (PATH, HOME and the test run's checkpoint key file), so that no API
// key leaks in from the test's process.
func execWardenEnv(t *testing.T, dir string, env []string, args ...string) result {
	t.Helper()
	cmd := exec.Command(wardenBinary(t), args...)
	cmd.Dir = dir
	cmd.Env = append(minimalEnv(), env...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	code := 0
	if err != nil {
		ee, ok := err.(*exec.ExitError)
		if !ok {
			t.Fatalf("running warden: %v", err)
		}
		code = ee.ExitCode()
	}
	return result{stdout: stdout.String(), stderr: stderr.String(), code: code}
}

// minimalEnv is the environment of the warden processes the tests start.
func minimalEnv() []string {
	return []string{"PATH=" + os.Getenv("PATH"), "HOME=" + os.Getenv("HOME"), checkpoint.KeyEnv + "=" + os.Getenv(checkpoint.KeyEnv)}
}

func wantContains(t *testing.T, what, got string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(got, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, got)
		}
	}
}

func TestRunToolCallAndAnswer(t *testing.T) {
	dir := runFixture(t)
	r := runWarden(t, "run", "--config", filepath.Join(dir, "read.yaml"), "What do the notes say?")
	if r.code != 0 || r.stderr != "" {
		t.Fatalf("exit %d, stderr %q\n%s", r.code, r.stderr, r.stdout)
	}
	wantContains(t, "stdout", r.stdout,
		"model:     scripted\n",
		"workspace: "+mustEval(t, filepath.Join(dir, "workspace"))+"\n",
		"task:      What do the notes say?\n",
		"→ reader {\"path\":\"notes.txt\"}\n  allowed by *\n  ← 37 chars\n",
		"answer (2 iterations, 1 tool call executed):\nThe notes say hello.\n")
}

// openCheckpoint checks and decodes a checkpoint with the test run's key.
func openCheckpoint(t *testing.T, data []byte) *checkpoint.Checkpoint {
	t.Helper()
	key, err := checkpoint.LoadKey(os.Getenv(checkpoint.KeyEnv), false)
	if err != nil {
		t.Fatal(err)
	}
	cp, err := checkpoint.Parse("checkpoint", data, key, "key")
	if err != nil {
		t.Fatalf("%v\n%s", err, data)
	}
	return cp
}

func readClaim(t *testing.T, file string) checkpoint.Claim {
	t.Helper()
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var c checkpoint.Claim
	if err := json.Unmarshal(data, &c); err != nil || c.Format != checkpoint.ClaimFormat {
		t.Fatalf("claim %s: %v\n%s", file, err, data)
	}
	return c
}

func mustEval(t *testing.T, p string) string {
	t.Helper()
	r, err := filepath.EvalSymlinks(p)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

// The task may be written as several words; without a workspace a temporary one is
// made and printed.
func TestRunTemporaryWorkspace(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "tmp.yaml")
	writeFile(t, cfg, "provider: {name: scripted, replies: [{calls: [{name: bash, args: {command: ls}}]}, {text: empty}]}\npolicy: policy.yaml\n")
	r := runWarden(t, "run", "--config", cfg, "list", "the", "files")
	if r.code != 0 {
		t.Fatalf("exit %d: %s", r.code, r.stderr)
	}
	m := regexp.MustCompile(`workspace: (\S+) \(a new temporary directory\)`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no temporary workspace printed:\n%s", r.stdout)
	}
	t.Cleanup(func() { os.RemoveAll(m[1]) })
	if fi, err := os.Stat(m[1]); err != nil || !fi.IsDir() {
		t.Errorf("workspace %s: %v", m[1], err)
	}
	wantContains(t, "stdout", r.stdout, "task:      list the files\n", "→ bash {\"command\":\"ls\"}\n  allowed by ls\n  ← 0 chars\n")
}

func writeFile(t *testing.T, p, content string) {
	t.Helper()
	if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

var checkpointLine = regexp.MustCompile(`(?m)^  checkpoint: (\S+)$`)

// pauseApproval is the approval digest of pause.yaml's paused call (the tool, the
// question and the arguments are the same in every run).
const pauseApproval = "sha256:edd344bedd2a2affb9b02d531bbd9156a7c9fd25c1b18572e5da1a98dbfb5f0b"

// pauseRun runs pause.yaml (in-process) and returns the checkpoint file it wrote.
func pauseRun(t *testing.T, dir string) (string, result) {
	t.Helper()
	cfg := filepath.Join(dir, "pause.yaml")
	r := runWarden(t, "run", "--config", cfg, "Append a line to log.txt")
	if r.code != exitAsk {
		t.Fatalf("exit %d, want %d (paused)\n%s%s", r.code, exitAsk, r.stdout, r.stderr)
	}
	m := checkpointLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no checkpoint printed:\n%s", r.stdout)
	}
	file := m[1]
	if filepath.Dir(file) != filepath.Join(dir, "checkpoints") || !regexp.MustCompile(`^warden-checkpoint-[0-9a-f]{12}\.json$`).MatchString(filepath.Base(file)) {
		t.Errorf("checkpoint file %s", file)
	}
	fi, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("checkpoint mode %v, want 0600", fi.Mode().Perm())
	}
	wantContains(t, "stdout", r.stdout,
		"→ editor {\"file_path\":\"log.txt\",\"action\":\"append\",\"content\":\"approved line\\n\"}\n  paused: a person must decide (below)\n",
		"paused: editor needs a person.\n",
		"  question:   Permission escalation for editor.append: escalate by rule: *. Allow this call?\n",
		"approve:  warden run --config "+cfg+" --resume "+file+" --approve --digest "+pauseApproval+" --by NAME\n",
		"decline:  warden run --config "+cfg+" --resume "+file+" --decline --by NAME --note 'why'\n")
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
		t.Errorf("the paused call ran: %v", err)
	}
	return file, r
}

// The pause writes a checkpoint; the printed command, run in a fresh process, resumes
// it and the tool runs once. The checkpoint is single-use.
func TestRunPauseResumeInFreshProcess(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	// The first run in a process of its own too.
	r := execWardenEnv(t, dir, nil, "run", "--config", cfg, "Append a line to log.txt")
	if r.code != exitAsk {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	m := regexp.MustCompile(`(?m)^approve:  warden (run .*) --approve --digest (sha256:[0-9a-f]{64}) --by NAME$`).FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no resume command printed:\n%s", r.stdout)
	}
	// The printed command, digest included: the person approves what the pause showed.
	args := append(strings.Fields(m[1]), "--approve", "--digest", m[2], "--by", "alice")
	file := checkpointLine.FindStringSubmatch(r.stdout)[1]
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	cp := openCheckpoint(t, data)
	if cp.Pending.Tool != "editor" || !json.Valid(cp.Checkpoint) || filepath.Base(file) != "warden-checkpoint-"+cp.ID+".json" {
		t.Fatalf("checkpoint file %s:\n%s", file, data)
	}

	r = execWardenEnv(t, t.TempDir(), nil, args...)
	if r.code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The person sees what they approve before it runs: the call and its digest.
	wantContains(t, "resume stdout", r.stdout,
		"resuming "+file+": editor approved by alice\n  call:     editor {\"file_path\":\"log.txt\",\"action\":\"append\",\"content\":\"approved line\\n\"}\n  digest:   "+cp.Pending.Digest+" (the arguments)\n  approval: "+cp.Pending.ApprovalDigest()+" (the tool, the question and the arguments)\n",
		"→ editor {\"file_path\":\"log.txt\",\"action\":\"append\",\"content\":\"approved line\\n\"}\n  approved by alice\n  ← 28 chars\n",
		"answer (2 iterations, 1 tool call executed):\nDone.\n")
	got, err := os.ReadFile(filepath.Join(dir, "workspace", "log.txt"))
	if err != nil || string(got) != "approved line\n" {
		t.Errorf("log.txt = %q, %v; want the line appended once", got, err)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the used checkpoint is still there: %v", err)
	}
	claim := readClaim(t, checkpoint.ClaimFileOf(file, cp.ID))
	if claim.State != "resumed" || claim.By != "alice" || claim.Decision != "approved" || claim.Tool != "editor" || claim.Digest != cp.Pending.Digest || claim.FinishedAt.IsZero() {
		t.Errorf("claim %+v", claim)
	}

	// A second resume of the same checkpoint runs nothing.
	r = execWardenEnv(t, t.TempDir(), nil, args...)
	if want := "warden: checkpoint " + file + " was already resumed (approved by alice at " + claim.ClaimedAt.Format(time.RFC3339) + "); a checkpoint resumes once\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("second resume: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
		t.Errorf("log.txt = %q after a second resume", got)
	}
}

func TestRunDecline(t *testing.T) {
	dir := runFixture(t)
	file, _ := pauseRun(t, dir)
	r := runWarden(t, "run", "--config", filepath.Join(dir, "pause.yaml"), "--resume", file, "--decline", "--by", "bob", "--note", "not this one")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout,
		"resuming "+file+": editor declined by bob\n",
		"  refused: declined by human: not this one\n",
		"answer (2 iterations, 0 tool calls executed):\nDone.\n")
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
		t.Errorf("a declined call ran: %v", err)
	}
}

func TestRunWorkspaceConfinement(t *testing.T) {
	dir := runFixture(t)
	if err := os.Symlink("/etc", filepath.Join(dir, "workspace", "link")); err != nil {
		t.Fatal(err)
	}
	r := runWarden(t, "run", "--config", filepath.Join(dir, "escape.yaml"), "read the password file")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout,
		"→ reader {\"path\":\"../etc/passwd\"}\n  refused: path \"../etc/passwd\" is outside the workspace; use a path inside it\n",
		"→ reader {\"path\":\"/etc/passwd\"}\n  refused: path \"/etc/passwd\" is outside the workspace; use a path inside it\n",
		// The demo shell's preprocessor refuses the file before anything runs.
		"→ bash {\"command\":\"cat ../../etc/passwd\"}\n  refused: path \"../../etc/passwd\" is outside the workspace; use a path inside it\n",
		"→ reader {\"path\":\"link/passwd\"}\n  refused: path \"link/passwd\" is outside the workspace; use a path inside it\n",
		"0 tool calls executed")
	if strings.Contains(r.stdout, "root:") {
		t.Error("a file outside the workspace was read")
	}
}

func TestRunDemoShell(t *testing.T) {
	dir := runFixture(t)
	r := runWarden(t, "run", "--config", filepath.Join(dir, "shell.yaml"), "look around")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout,
		"→ bash {\"command\":\"ls\"}\n  allowed by ls\n  ← 10 chars\n",
		"→ bash {\"command\":\"wc -l notes.txt\"}\n  allowed by wc -l *\n  ← 12 chars\n",
		"→ bash {\"command\":\"echo 'hi there'\"}\n  allowed by echo *\n  ← 9 chars\n",
		"→ bash {\"command\":\"date\"}\n  allowed by date\n  failed: Tool 'bash' failed: this demo shell supports only ls, cat, echo, pwd, wc -l\n",
		"→ bash {\"command\":\"ls; rm -rf /\"}\n  refused: [permission denied: Shell control operator requires explicit approval: 'ls; rm -rf /']\n",
		"→ search {\"pattern\":\"second\"}\n  allowed by *\n  ← 24 chars\n")
}

func TestRunHalt(t *testing.T) {
	dir := runFixture(t)
	r := runWarden(t, "run", "--config", filepath.Join(dir, "halt.yaml"), "read the secrets")
	if r.code != exitHalt {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, exitHalt, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout,
		"→ reader {\"path\":\"secrets/keys.txt\"}\n  halted: That file is off limits. Stopping here and handing off.\n",
		"→ reader {\"path\":\"notes.txt\"}\n  Not run: the run was halted by policy before this call.\n",
		"halted by policy: rule no-secrets (security:exfiltration)\n",
		"reader was not executed; the run ended.")
	if strings.Contains(r.stdout, "answer") {
		t.Error("a halted run answered")
	}
}

func TestRunBadConfig(t *testing.T) {
	dir := runFixture(t)
	tests := []struct {
		file  string
		wants []string
	}{
		{"bad-keys.yaml", []string{
			"bad-keys.yaml:3:3: unknown key \"replys\" in provider (known keys: name, model, base_url, max_tokens, replies)",
			"bad-keys.yaml:6:17: max_iterations must be a whole number, got a string (write a whole number)",
			"bad-keys.yaml:2:3: the scripted provider needs replies",
		}},
		{"bad-provider.yaml", []string{"bad-provider.yaml:2:9: unknown provider \"gemini\" (use anthropic, openai or scripted)"}},
		{"no-policy.yaml", []string{
			"no-policy.yaml:1:1: policy is required (add `policy: <file>`: warden run never runs tools without a policy)",
			"no-policy.yaml:5:5: provider openai takes no replies",
		}},
		{"missing-policy-file.yaml", []string{"does-not-exist.yaml: cannot read policy file: no such file or directory"}},
		{"absent.yaml", []string{"absent.yaml: cannot read the agent configuration: no such file or directory"}},
	}
	for _, tt := range tests {
		t.Run(tt.file, func(t *testing.T) {
			r := runWarden(t, "run", "--config", filepath.Join(dir, tt.file), "task")
			if r.code != exitUsage || r.stdout != "" {
				t.Errorf("exit %d, stdout %q; want exit 2 and nothing on stdout", r.code, r.stdout)
			}
			wantContains(t, "stderr", r.stderr, tt.wants...)
		})
	}

	more := map[string]string{
		"empty":          "",
		"two docs":       "provider: {name: scripted, replies: [{text: hi}]}\npolicy: policy.yaml\n---\nx: 1\n",
		"alias":          "p: &a policy.yaml\nprovider: {name: scripted, replies: [{text: hi}]}\npolicy: *a\n",
		"no model":       "provider: {name: anthropic}\npolicy: policy.yaml\n",
		"empty reply":    "provider: {name: scripted, replies: [{}]}\npolicy: policy.yaml\n",
		"call no name":   "provider: {name: scripted, replies: [{calls: [{args: {}}]}]}\npolicy: policy.yaml\n",
		"bad iterations": "provider: {name: scripted, replies: [{text: hi}]}\npolicy: policy.yaml\nmax_iterations: 0\n",
		"no workspace":   "provider: {name: scripted, replies: [{text: hi}]}\npolicy: policy.yaml\nworkspace: nowhere\n",
		"bad pack":       "provider: {name: scripted, replies: [{text: hi}]}\npolicy: policy.yaml\ndirectives: {role: x}\n",
		"bad role":       "provider: {name: scripted, replies: [{text: hi}]}\npolicy: policy.yaml\nrole: ghost\n",
	}
	wants := map[string]string{
		"empty":          "agent configuration is empty",
		"two docs":       ":4:1: more than one YAML document",
		"alias":          ":1:4: YAML anchors and aliases are not allowed",
		"no model":       ":1:11: provider.model is required for anthropic",
		"empty reply":    ":1:38: provider.replies[0] is empty",
		"call no name":   ":1:47: provider.replies[0].calls[0].name is required",
		"bad iterations": ":3:17: max_iterations: 0 is out of range",
		"no workspace":   ":3:12: workspace: ",
		"bad pack":       ":3:13: directives.pack is required",
		"bad role":       "ghost",
	}
	for name, content := range more {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(dir, strings.ReplaceAll(name, " ", "-")+".yaml")
			writeFile(t, cfg, content)
			r := runWarden(t, "run", "--config", cfg, "task")
			if r.code != exitUsage {
				t.Errorf("exit %d, want 2", r.code)
			}
			wantContains(t, "stderr", r.stderr, wants[name])
		})
	}
}

func TestRunUsage(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "read.yaml")
	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"run", "task"}, `required flag(s) "config" not set`},
		{[]string{"run", "--config", cfg}, "no task"},
		{[]string{"run", "--config", cfg, "--approve", "task"}, "--approve is only for --resume"},
		{[]string{"run", "--config", cfg, "--by", "a", "task"}, "--by is only for --resume"},
		{[]string{"run", "--config", cfg, "--resume", "x.json", "--by", "a"}, "exactly one of --approve and --decline"},
		{[]string{"run", "--config", cfg, "--resume", "x.json", "--approve", "--decline", "--by", "a"}, "exactly one of --approve and --decline"},
		{[]string{"run", "--config", cfg, "--resume", "x.json", "--approve"}, "--resume needs --by NAME"},
		{[]string{"run", "--config", cfg, "--resume", "x.json", "--approve", "--by", "a", "more"}, "a resumed run continues its own task"},
		{[]string{"run", "--config", cfg, "--resume", filepath.Join(dir, "policy.yaml"), "--approve", "--by", "a"}, "not a warden run checkpoint"},
	} {
		r := runWarden(t, tt.args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("warden %s: exit %d, stderr %q; want 2 and %q", strings.Join(tt.args, " "), r.code, r.stderr, tt.want)
		}
	}
}

// anthropicServer speaks the Messages API: the first answer calls reader, the second
// answers with text. It records the requests.
type anthropicServer struct {
	*httptest.Server
	mu   sync.Mutex
	reqs []map[string]any
	keys []string
}

func newAnthropicServer(t *testing.T) *anthropicServer {
	s := &anthropicServer{}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.Method != http.MethodPost || r.URL.Path != "/v1/messages" {
			http.Error(w, "not found", http.StatusNotFound)
			return
		}
		body, _ := io.ReadAll(r.Body)
		var req map[string]any
		if err := json.Unmarshal(body, &req); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		s.mu.Lock()
		s.reqs = append(s.reqs, req)
		key := r.Header.Get("X-Api-Key") // the API's header; SDK v2 sends the key as a bearer token
		if key == "" {
			key = strings.TrimPrefix(r.Header.Get("Authorization"), "Bearer ")
		}
		s.keys = append(s.keys, key)
		n := len(s.reqs)
		s.mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		if n == 1 {
			io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-test",
				"content":[{"type":"text","text":"Let me read the notes."},
				           {"type":"tool_use","id":"toolu_01","name":"reader","input":{"path":"notes.txt"}}],
				"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":100,"output_tokens":20}}`)
			return
		}
		io.WriteString(w, `{"id":"msg_02","type":"message","role":"assistant","model":"claude-test",
			"content":[{"type":"text","text":"The notes say hello from the workspace."}],
			"stop_reason":"end_turn","stop_sequence":null,"usage":{"input_tokens":150,"output_tokens":10}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

func (s *anthropicServer) check(t *testing.T, key string) {
	t.Helper()
	s.mu.Lock()
	defer s.mu.Unlock()
	if len(s.reqs) != 2 {
		t.Fatalf("%d requests, want 2", len(s.reqs))
	}
	for i, k := range s.keys {
		if k != key {
			t.Errorf("request %d: API key %q", i, k)
		}
	}
	first := s.reqs[0]
	if first["model"] != "claude-test" || first["max_tokens"] != float64(256) {
		t.Errorf("first request: model %v, max_tokens %v", first["model"], first["max_tokens"])
	}
	var tools []string
	for _, tl := range first["tools"].([]any) {
		tools = append(tools, tl.(map[string]any)["name"].(string))
	}
	if strings.Join(tools, ",") != "reader,editor,search,bash" {
		t.Errorf("tools offered: %v", tools)
	}
	// The second request carries the tool result of toolu_01 with the file's content.
	b, _ := json.Marshal(s.reqs[1]["messages"])
	wantContains(t, "second request", string(b), `"tool_use_id":"toolu_01"`, `hello from the workspace\nsecond line\n`)
}

func anthropicConfig(t *testing.T, dir, url string) string {
	cfg := filepath.Join(dir, "anthropic.yaml")
	writeFile(t, cfg, "provider:\n  name: anthropic\n  model: claude-test\n  base_url: "+url+"\n  max_tokens: 256\npolicy: policy.yaml\nworkspace: workspace\n")
	return cfg
}

func TestRunAnthropicWire(t *testing.T) {
	dir := runFixture(t)
	srv := newAnthropicServer(t)
	cfg := anthropicConfig(t, dir, srv.URL)
	t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test-inprocess")
	r := runWarden(t, "run", "--config", cfg, "What do the notes say?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout,
		"model:     anthropic claude-test\n",
		"→ reader {\"path\":\"notes.txt\"}\n  allowed by *\n  ← 37 chars\n",
		"answer (2 iterations, 1 tool call executed):\nThe notes say hello from the workspace.\n")
	srv.check(t, "sk-ant-test-inprocess")
}

// The same run in a process of its own, its environment passed explicitly.
func TestRunAnthropicWireBinary(t *testing.T) {
	dir := runFixture(t)
	srv := newAnthropicServer(t)
	cfg := anthropicConfig(t, dir, srv.URL)
	r := execWardenEnv(t, dir, []string{"ANTHROPIC_API_KEY=sk-ant-test-subprocess"}, "run", "--config", cfg, "What do the notes say?")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout, "The notes say hello from the workspace.")
	srv.check(t, "sk-ant-test-subprocess")
}

func TestRunMissingAPIKey(t *testing.T) {
	dir := runFixture(t)
	cfg := anthropicConfig(t, dir, "http://127.0.0.1:1")
	r := execWardenEnv(t, dir, nil, "run", "--config", cfg, "task")
	if r.code != exitUsage || !strings.Contains(r.stderr, "ANTHROPIC_API_KEY") {
		t.Errorf("anthropic without a key: exit %d, stderr %q", r.code, r.stderr)
	}
	writeFile(t, cfg, "provider: {name: openai, model: gpt-4.1}\npolicy: policy.yaml\n")
	r = execWardenEnv(t, dir, nil, "run", "--config", cfg, "task")
	if r.code != exitUsage || !strings.Contains(r.stderr, "OPENAI_API_KEY") {
		t.Errorf("openai without a key: exit %d, stderr %q", r.code, r.stderr)
	}
}

// The shipped example loads: its policy, its provider settings.
func TestRunExampleConfig(t *testing.T) {
	cfg, err := runfile.Load(filepath.Join("..", "..", "examples", "agent", "agent.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Provider.Name != "anthropic" || cfg.Provider.Model == "" || cfg.Workspace != "" || cfg.CheckpointDir != "." {
		t.Errorf("config %+v", cfg)
	}
	r := runWarden(t, "validate", cfg.Policy)
	if r.code != 0 {
		t.Errorf("validate %s: exit %d %s", cfg.Policy, r.code, r.stderr)
	}
	// Offline, with the scripted provider, the example's policy pauses a write.
	dir := t.TempDir()
	pol, _ := filepath.Abs(cfg.Policy)
	writeFile(t, filepath.Join(dir, "a.yaml"), "provider: {name: scripted, replies: [{calls: [{name: editor, args: {file_path: haiku.txt, action: write, content: x}}]}]}\npolicy: "+pol+"\nworkspace: .\n")
	r = runWarden(t, "run", "--config", filepath.Join(dir, "a.yaml"), "write")
	if r.code != exitAsk {
		t.Errorf("exit %d, want 4\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The pending call is judged again under the policy as it is at resume time.
func TestRunResumeUnderChangedPolicy(t *testing.T) {
	dir := runFixture(t)
	file, _ := pauseRun(t, dir)
	writeFile(t, filepath.Join(dir, "policy.yaml"), "version: 1\nmode: rules\nrules:\n  deny:\n    editor: [\"*\"]\n  allow:\n    reader: [\"*\"]\n")
	r := runWarden(t, "run", "--config", filepath.Join(dir, "pause.yaml"), "--resume", file, "--approve", "--by", "alice")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout,
		"  refused: [permission denied: denied by rule: *]\n",
		"note: the policy changed since the pause (sha256:",
		"0 tool calls executed")
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
		t.Error("the call ran under a policy that now denies it")
	}
}

// A checkpoint whose pending call was altered is refused; the file stays.
func TestRunAlteredPendingCall(t *testing.T) {
	dir := runFixture(t)
	file, _ := pauseRun(t, dir)
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range []int{1, -1} { // the copy shown to people only, then every copy
		altered := bytes.Replace(data, []byte(`"content": "approved line\n"`), []byte(`"content": "something else\n"`), n)
		if bytes.Equal(altered, data) {
			t.Fatalf("nothing to alter in %s", data)
		}
		writeFile(t, file, string(altered))
		r := runWarden(t, "run", "--config", filepath.Join(dir, "pause.yaml"), "--resume", file, "--approve", "--by", "mallory")
		if r.code != exitUsage || !strings.Contains(r.stderr, "altered") {
			t.Errorf("replacing %d: exit %d, stderr %q", n, r.code, r.stderr)
		}
	}
	if _, err := os.Stat(file); err != nil {
		t.Errorf("the refused checkpoint was removed: %v", err)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
		t.Error("an altered checkpoint ran the call")
	}
}

// shellWords splits a command line printed with runQuote: words separated by spaces,
// single-quoted parts taken literally.
func shellWords(t *testing.T, line string) []string {
	t.Helper()
	var words []string
	var cur strings.Builder
	inWord, quoted := false, false
	for _, r := range line {
		switch {
		case r == '\'':
			quoted, inWord = !quoted, true
		case r == ' ' && !quoted:
			if inWord {
				words = append(words, cur.String())
				cur.Reset()
			}
			inWord = false
		default:
			cur.WriteRune(r)
			inWord = true
		}
	}
	if quoted {
		t.Fatalf("unbalanced quotes in %q", line)
	}
	if inWord {
		words = append(words, cur.String())
	}
	return words
}

var storedCheckpointLine = regexp.MustCompile(`(?m)^  checkpoint: (ckpt_[0-9a-f]{12}) \(in the store (\S+)\)$`)

// storedCheckpoint reads what the store holds under id.
func storedCheckpoint(t *testing.T, dsn, id string) ([]byte, error) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	return st.GetCheckpoint(ctx, id)
}

func putStoredCheckpoint(t *testing.T, dsn, id string, data []byte) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := store.Open(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if err := st.PutCheckpoint(ctx, id, data); err != nil {
		t.Fatal(err)
	}
}

// With a store, a pause keeps its checkpoint there by id (no file); the printed command
// resumes it in a fresh process, elsewhere, and the tool runs once; a second resume and
// an unknown id are refused. SQLite always; PostgreSQL when WARDEN_TEST_POSTGRES_DSN is
// set (each test in a schema of its own).
func TestRunStoreCheckpointAcrossProcesses(t *testing.T) {
	for _, k := range testStores() {
		t.Run(k.name, func(t *testing.T) {
			dsn := k.dsn(t)
			dir := runFixture(t)
			cfg := filepath.Join(dir, "pause.yaml")
			r := execWardenEnv(t, dir, nil, "run", "--config", cfg, "--store", dsn, "Append a line to log.txt")
			if r.code != exitAsk {
				t.Fatalf("pause: exit %d, want %d\n%s%s", r.code, exitAsk, r.stdout, r.stderr)
			}
			m := storedCheckpointLine.FindStringSubmatch(r.stdout)
			if m == nil {
				t.Fatalf("no stored checkpoint printed:\n%s", r.stdout)
			}
			id := m[1]
			base := "warden run --config " + runQuote(cfg) + " --store " + runQuote(dsn) + " --resume " + id
			wantContains(t, "pause stdout", r.stdout,
				"paused: editor needs a person.\n",
				"approve:  "+base+" --approve --digest "+pauseApproval+" --by NAME\n",
				"decline:  "+base+" --decline --by NAME --note 'why'\n")
			if _, err := os.Stat(filepath.Join(dir, "checkpoints")); !os.IsNotExist(err) {
				t.Errorf("a checkpoint file was written too: %v", err)
			}
			data, err := storedCheckpoint(t, dsn, id)
			if err != nil {
				t.Fatalf("GetCheckpoint(%s): %v", id, err)
			}
			if cp := openCheckpoint(t, data); cp.Pending.Tool != "editor" || !json.Valid(cp.Checkpoint) || id != "ckpt_"+cp.ID {
				t.Fatalf("stored checkpoint:\n%s", data)
			}
			if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
				t.Errorf("the paused call ran: %v", err)
			}

			// The printed command, in a fresh process in another directory.
			line := regexp.MustCompile(`(?m)^approve:  warden (run .*) --approve --digest sha256:[0-9a-f]{64} --by NAME$`).FindStringSubmatch(r.stdout)
			if line == nil {
				t.Fatalf("no resume command printed:\n%s", r.stdout)
			}
			args := append(shellWords(t, line[1]), "--approve", "--by", "alice")
			r = execWardenEnv(t, t.TempDir(), nil, args...)
			if r.code != 0 {
				t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			wantContains(t, "resume stdout", r.stdout,
				"resuming "+id+": editor approved by alice\n",
				"→ editor {\"file_path\":\"log.txt\",\"action\":\"append\",\"content\":\"approved line\\n\"}\n  approved by alice\n  ← 28 chars\n",
				"answer (2 iterations, 1 tool call executed):\nDone.\n")
			got, err := os.ReadFile(filepath.Join(dir, "workspace", "log.txt"))
			if err != nil || string(got) != "approved line\n" {
				t.Errorf("log.txt = %q, %v; want the line appended once", got, err)
			}

			// Single use: a second resume, approve or decline, is refused and runs nothing.
			for _, verdict := range []string{"--approve", "--decline"} {
				r = execWardenEnv(t, t.TempDir(), nil, "run", "--config", cfg, "--store", dsn, "--resume", id, verdict, "--by", "mallory")
				if r.code != exitUsage || !strings.Contains(r.stderr, "checkpoint "+id+" was already resumed (approved by alice at ") {
					t.Errorf("second resume %s: exit %d, stderr %q", verdict, r.code, r.stderr)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
				t.Errorf("log.txt = %q after a second resume", got)
			}

			// An unknown id.
			r = execWardenEnv(t, t.TempDir(), nil, "run", "--config", cfg, "--store", dsn, "--resume", "ckpt_000000000000", "--approve", "--by", "alice")
			if r.code != exitUsage || !strings.Contains(r.stderr, "no checkpoint ckpt_000000000000 in the store") {
				t.Errorf("unknown id: exit %d, stderr %q", r.code, r.stderr)
			}
		})
	}
}

// pauseToStore runs pause.yaml in-process with the store given as args and returns the
// checkpoint id.
func pauseToStore(t *testing.T, dir string, args ...string) string {
	t.Helper()
	r := runWarden(t, append([]string{"run", "--config", filepath.Join(dir, "pause.yaml")}, append(args, "Append a line to log.txt")...)...)
	if r.code != exitAsk {
		t.Fatalf("exit %d, want %d\n%s%s", r.code, exitAsk, r.stdout, r.stderr)
	}
	m := storedCheckpointLine.FindStringSubmatch(r.stdout)
	if m == nil {
		t.Fatalf("no stored checkpoint printed:\n%s", r.stdout)
	}
	if _, err := os.Stat(filepath.Join(dir, "checkpoints")); !os.IsNotExist(err) {
		t.Errorf("a checkpoint file was written too: %v", err)
	}
	return m[1]
}

// The store comes from --store, else $WARDEN_STORE, else store: in agent.yaml; without
// any, checkpoints are files.
func TestRunStoreSources(t *testing.T) {
	dir := runFixture(t)
	flagDSN := "sqlite://" + filepath.Join(t.TempDir(), "flag.db")
	envDSN := "sqlite://" + filepath.Join(t.TempDir(), "env.db")
	yamlDSN := "sqlite://" + filepath.Join(t.TempDir(), "yaml.db")

	t.Setenv("WARDEN_STORE", "")
	if file, _ := pauseRun(t, dir); !strings.HasSuffix(file, ".json") {
		t.Errorf("without a store: checkpoint %s", file)
	}
	os.RemoveAll(filepath.Join(dir, "checkpoints"))

	data, err := os.ReadFile(filepath.Join(dir, "pause.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(dir, "pause.yaml"), string(data)+"store: "+yamlDSN+"\n")
	if id := pauseToStore(t, dir); !storeHas(t, yamlDSN, id) {
		t.Errorf("store: in agent.yaml: %s not in %s", id, yamlDSN)
	}
	t.Setenv("WARDEN_STORE", envDSN)
	if id := pauseToStore(t, dir); !storeHas(t, envDSN, id) {
		t.Errorf("$WARDEN_STORE: %s not in %s", id, envDSN)
	}
	if id := pauseToStore(t, dir, "--store", flagDSN); !storeHas(t, flagDSN, id) || storeHas(t, envDSN, id) || storeHas(t, yamlDSN, id) {
		t.Errorf("--store: %s not in %s alone", id, flagDSN)
	}
}

func storeHas(t *testing.T, dsn, id string) bool {
	t.Helper()
	_, err := storedCheckpoint(t, dsn, id)
	if err != nil && !errors.Is(err, store.ErrNotFound) {
		t.Fatal(err)
	}
	return err == nil
}

// A stored checkpoint gets the file's checks: an altered one is refused and stays; a
// changed policy is noted. A checkpoint file still resumes with a store set; an id
// without a store, or with a store file that does not exist, is exit 2.
func TestRunStoreCheckpointChecks(t *testing.T) {
	t.Setenv("WARDEN_STORE", "")
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	id := pauseToStore(t, dir, "--store", dsn)
	data, err := storedCheckpoint(t, dsn, id)
	if err != nil {
		t.Fatal(err)
	}
	altered := bytes.Replace(data, []byte(`"content": "approved line\n"`), []byte(`"content": "something else\n"`), 1)
	if bytes.Equal(altered, data) {
		t.Fatalf("nothing to alter in %s", data)
	}
	putStoredCheckpoint(t, dsn, id, altered)
	r := runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", id, "--approve", "--by", "mallory")
	if r.code != exitUsage || !strings.Contains(r.stderr, "altered") || !strings.Contains(r.stderr, id) {
		t.Errorf("altered: exit %d, stderr %q", r.code, r.stderr)
	}
	if got, err := storedCheckpoint(t, dsn, id); err != nil || !bytes.Equal(got, altered) {
		t.Errorf("the refused checkpoint changed: %v\n%s", err, got)
	}

	// Restored, and resumed under a policy that changed since the pause.
	putStoredCheckpoint(t, dsn, id, data)
	writeFile(t, filepath.Join(dir, "policy.yaml"), "version: 1\nmode: rules\nrules:\n  deny:\n    editor: [\"*\"]\n  allow:\n    reader: [\"*\"]\n")
	r = runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", id, "--approve", "--by", "alice")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	wantContains(t, "stdout", r.stdout, "note: the policy changed since the pause (sha256:", "0 tool calls executed")
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
		t.Error("the call ran under a policy that now denies it")
	}
	if got, _ := storedCheckpoint(t, dsn, id); !strings.Contains(string(got), `"state": "resumed"`) {
		t.Errorf("the used checkpoint was not marked resumed: %s", got)
	}

	// A checkpoint file resumes as before even with a store, and is removed.
	writeFile(t, filepath.Join(dir, "policy.yaml"), "version: 1\nmode: rules\nrules:\n  escalate:\n    editor: [\"*\"]\n")
	file, _ := pauseRun(t, dir)
	r = runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", file, "--decline", "--by", "bob")
	if r.code != 0 || !strings.Contains(r.stdout, "resuming "+file+": editor declined by bob\n") {
		t.Errorf("file with a store: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(file); !os.IsNotExist(err) {
		t.Errorf("the used checkpoint file is still there: %v", err)
	}

	for _, tt := range []struct {
		args []string
		want string
	}{
		{[]string{"--resume", id}, "is not a file; if it is a stored checkpoint's id, name the store with --store DSN or $WARDEN_STORE"},
		{[]string{"--store", "sqlite://" + filepath.Join(t.TempDir(), "none.db"), "--resume", id}, "no store at"},
		{[]string{"--store", "nowhere", "--resume", id}, "the DSN has no scheme"},
		{[]string{"--store", "nowhere", "task"}, "the DSN has no scheme"},
	} {
		args := append([]string{"run", "--config", cfg}, tt.args...)
		if tt.args[len(tt.args)-1] != "task" {
			args = append(args, "--approve", "--by", "alice")
		}
		r := runWarden(t, args...)
		if r.code != exitUsage || !strings.Contains(r.stderr, tt.want) {
			t.Errorf("warden %s: exit %d, stderr %q; want 2 and %q", strings.Join(args, " "), r.code, r.stderr, tt.want)
		}
	}
}
