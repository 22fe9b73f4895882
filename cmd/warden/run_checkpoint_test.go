package main

// warden run's checkpoints: sealed, claimed once. Issue 13, deliverable 2:
//
//	"Checkpoint files are integrity-protected (an HMAC with a key the runtime keeps
//	...): an edited checkpoint is refused with a clear error, not resumed (today even
//	its `workspace` field is trusted: set to `/`, the approved reader call reads the
//	host's files). Resuming claims the checkpoint atomically before anything runs (a
//	store compare-and-swap; an exclusive rename or lock for files): of any number of
//	concurrent resumes exactly one proceeds, the others are refused; a resume that dies
//	after its tool ran cannot be resumed again into a second execution (record the
//	claim, report "outcome unknown")."

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/checkpoint"
	"github.com/wardenhq/warden/internal/seal"
)

// testKey is the test run's checkpoint key.
func testKey(t *testing.T) []byte {
	t.Helper()
	key, err := checkpoint.LoadKey(os.Getenv(checkpoint.KeyEnv), false)
	if err != nil {
		t.Fatal(err)
	}
	return key
}

// editDoc edits a sealed document's body and keeps its seal: what someone without the
// key can do. With key set, the body is sealed again under it.
func editDoc(t *testing.T, data []byte, key []byte, f func(body map[string]any)) []byte {
	t.Helper()
	var env map[string]json.RawMessage
	if err := json.Unmarshal(data, &env); err != nil {
		t.Fatal(err)
	}
	var body map[string]any
	dec := json.NewDecoder(bytes.NewReader(env["body"]))
	dec.UseNumber()
	if err := dec.Decode(&body); err != nil {
		t.Fatal(err)
	}
	f(body)
	b, err := json.Marshal(body)
	if err != nil {
		t.Fatal(err)
	}
	if key != nil {
		var format string
		json.Unmarshal(env["format"], &format)
		resealed, err := seal.Seal(key, format, b)
		if err != nil {
			t.Fatal(err)
		}
		return resealed
	}
	env["body"] = b
	out, err := json.MarshalIndent(env, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// redirectCall edits a pending editor call consistently, in the file's copy and in
// the agent's checkpoint: the arguments, the original arguments, their digest, the
// model's call and the conversation. Whoever cannot seal leaves the agent's seal as
// it was; with innerKey the agent's checkpoint is sealed again under it.
func redirectCall(t *testing.T, innerKey []byte) func(body map[string]any) {
	t.Helper()
	newArgs := map[string]any{"file_path": "log.txt", "action": "append", "content": "NOT what alice saw\n"}
	args, err := warden.NewArgs("file_path", "log.txt", "action", "append", "content", "NOT what alice saw\n")
	if err != nil {
		t.Fatal(err)
	}
	digest := args.Digest()
	editPending := func(p map[string]any) {
		p["args"], p["original"], p["digest"] = newArgs, newArgs, digest
	}
	return func(body map[string]any) {
		editPending(body["pending"].(map[string]any))
		inner, _ := json.Marshal(body["checkpoint"])
		body["checkpoint"] = json.RawMessage(editDoc(t, inner, innerKey, func(cp map[string]any) {
			editPending(cp["pending"].(map[string]any))
			cp["pending_call"].(map[string]any)["args"] = newArgs
			msgs := cp["messages"].([]any)
			msgs[len(msgs)-1].(map[string]any)["tool_calls"].([]any)[0].(map[string]any)["args"] = newArgs
		}))
	}
}

func noClaim(t *testing.T, file string) {
	t.Helper()
	matches, _ := filepath.Glob(filepath.Join(filepath.Dir(file), "*.claim.json"))
	if len(matches) != 0 {
		t.Errorf("a refused checkpoint was claimed: %v", matches)
	}
}

// An edited checkpoint is refused with a clear error, not resumed; nothing runs and the
// file stays, unclaimed.
func TestRunEditedCheckpointIsRefused(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	file, _ := pauseRun(t, dir)
	good, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	altered := file + ": the checkpoint was altered after the pause: its seal does not match its content, so it is not resumed and nothing ran (pause the run again to get a new checkpoint)\n"
	tests := []struct {
		name string
		data []byte
		want string
	}{
		// "A consistently edited checkpoint redirects an approval. Editing the pending
		// arguments, the original arguments and the digest together makes Approved{By}
		// run a call the person never saw."
		{"consistent edit of the call", editDoc(t, good, nil, redirectCall(t, nil)), altered},
		{"workspace set to /", editDoc(t, good, nil, func(b map[string]any) { b["workspace"] = "/" }), altered},
		{"sealed again under another key", editDoc(t, good, bytes.Repeat([]byte("another-key!"), 3), func(b map[string]any) { b["workspace"] = "/" }),
			""}, // the key id names the other key: checked below
		// The file sealed again with the right key, the agent's checkpoint inside
		// edited without it: the agent's own seal refuses it.
		{"agent checkpoint edited inside a resealed file", editDoc(t, good, testKey(t), redirectCall(t, nil)),
			file + ": agent: checkpoint failed its integrity check: its seal does not match its content: it was changed after the pause, and is not resumed\n"},
		{"unsealed, as written before checkpoints were sealed", func() []byte {
			var env map[string]json.RawMessage
			json.Unmarshal(good, &env)
			var body map[string]any
			json.Unmarshal(env["body"], &body)
			body["format"] = "warden.run.checkpoint/v1"
			delete(body, "id")
			b, _ := json.MarshalIndent(body, "", "  ")
			return b
		}(), file + `: the checkpoint has no seal (format "warden.run.checkpoint/v1", written before checkpoints were sealed): nothing shows it was not edited, so it is not resumed (run the task again)` + "\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			writeFile(t, file, string(tt.data))
			r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "mallory")
			want := tt.want
			if want == "" {
				m := regexp.MustCompile(`key id ([0-9a-f]{16});`).FindStringSubmatch(r.stderr)
				if m == nil {
					t.Fatalf("stderr %q names no key id", r.stderr)
				}
				want = file + ": the checkpoint was sealed with another checkpoint key (key id " + m[1] + "; " + os.Getenv(checkpoint.KeyEnv) + " has key id " + seal.KeyID(testKey(t)) + ") (pass the key file the run paused with in --checkpoint-key or $WARDEN_CHECKPOINT_KEY_FILE)\n"
			}
			if r.code != exitUsage || r.stderr != want {
				t.Errorf("exit %d, stderr\n%q\nwant\n%q", r.code, r.stderr, want)
			}
			if strings.Contains(r.stdout, "resuming") {
				t.Errorf("it began to resume:\n%s", r.stdout)
			}
			if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
				t.Error("an edited checkpoint ran the call")
			}
			if got, _ := os.ReadFile(file); !bytes.Equal(got, tt.data) {
				t.Error("the refused checkpoint changed")
			}
			noClaim(t, file)
		})
	}

	// Restored, it resumes.
	writeFile(t, file, string(good))
	r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "alice")
	if r.code != 0 {
		t.Fatalf("the restored checkpoint: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// The finding about the workspace, with a reader call: a checkpoint whose workspace was
// set to "/" does not read the host's files.
func TestRunEditedWorkspaceIsRefused(t *testing.T) {
	dir := runFixture(t)
	writeFile(t, filepath.Join(dir, "read-ask.yaml"), "version: 1\nmode: rules\nrules:\n  escalate:\n    reader: [\"*\"]\n")
	cfg := filepath.Join(dir, "reader.yaml") // no workspace: the checkpoint's is used
	writeFile(t, cfg, "provider: {name: scripted, replies: [{calls: [{id: c1, name: reader, args: {path: etc/passwd}}]}, {text: done}]}\npolicy: read-ask.yaml\ncheckpoint_dir: checkpoints\n")
	r := runWarden(t, "run", "--config", cfg, "read the password file")
	if r.code != exitAsk {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	file := checkpointLine.FindStringSubmatch(r.stdout)[1]
	data, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if ws := openCheckpoint(t, data).Workspace; !strings.HasPrefix(filepath.Base(ws), "warden-workspace-") {
		t.Fatalf("workspace %s", ws)
	} else {
		t.Cleanup(func() { os.RemoveAll(ws) })
	}
	writeFile(t, file, string(editDoc(t, data, nil, func(b map[string]any) { b["workspace"] = "/" })))
	r = runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "alice")
	want := file + ": the checkpoint was altered after the pause: its seal does not match its content, so it is not resumed and nothing ran (pause the run again to get a new checkpoint)\n"
	if r.code != exitUsage || r.stderr != want || r.stdout != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want %q", r.code, r.stdout, r.stderr, want)
	}
	if strings.Contains(r.stdout, "root:") {
		t.Error("the host's password file was read")
	}
	noClaim(t, file)
}

// The key: created once, readable by its owner only, required to resume.
func TestRunCheckpointKey(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	keyFile := filepath.Join(t.TempDir(), "sub", "checkpoint.key")
	r := runWarden(t, "run", "--config", cfg, "--checkpoint-key", keyFile, "Append a line to log.txt")
	if r.code != exitAsk {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	file := checkpointLine.FindStringSubmatch(r.stdout)[1]
	fi, err := os.Stat(keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o600 {
		t.Errorf("key file mode %v, want 0600", fi.Mode().Perm())
	}
	text, _ := os.ReadFile(keyFile)
	if !regexp.MustCompile(`^[0-9a-f]{64}\n$`).Match(text) {
		t.Errorf("key file %q, want 64 hex digits", text)
	}
	// The environment names the key file when the flag does not.
	t.Setenv(checkpoint.KeyEnv, keyFile)
	if r := runWarden(t, "run", "--config", cfg, "Append a line to log.txt"); r.code != exitAsk {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	if again, _ := os.ReadFile(keyFile); !bytes.Equal(again, text) {
		t.Error("the key changed on second use")
	}

	missing := filepath.Join(t.TempDir(), "none.key")
	for _, tt := range []struct {
		name, key string
		prep      func()
		want      string
	}{
		{"missing", missing, nil, "warden: no checkpoint key at " + missing + ": a checkpoint resumes only with the key it was sealed with; pass the key file the run paused with in --checkpoint-key or $WARDEN_CHECKPOINT_KEY_FILE\n"},
		{"readable by others", keyFile, func() { os.Chmod(keyFile, 0o644) },
			"warden: checkpoint key " + keyFile + ": readable by others (mode 0644): make it readable by its owner only (chmod 600 " + keyFile + ")\n"},
		{"not hex", keyFile, func() { os.Chmod(keyFile, 0o600); writeFile(t, keyFile, "not a key\n"); os.Chmod(keyFile, 0o600) },
			"warden: checkpoint key " + keyFile + ": not a key: want 32 or more bytes in hex (encoding/hex: invalid byte: U+006E 'n')\n"},
		{"short", keyFile, func() { writeFile(t, keyFile, "abcd\n"); os.Chmod(keyFile, 0o600) },
			"warden: checkpoint key " + keyFile + ": the key is 2 bytes, want at least 32\n"},
	} {
		t.Run(tt.name, func(t *testing.T) {
			if tt.prep != nil {
				tt.prep()
			}
			r := runWarden(t, "run", "--config", cfg, "--checkpoint-key", tt.key, "--resume", file, "--approve", "--by", "alice")
			if r.code != exitUsage || r.stderr != tt.want {
				t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, tt.want)
			}
		})
	}
	if _, err := os.Stat(missing); !os.IsNotExist(err) {
		t.Error("a resume created a key")
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
		t.Error("the call ran")
	}
	writeFile(t, keyFile, string(text))
	os.Chmod(keyFile, 0o600)
	if r := runWarden(t, "run", "--config", cfg, "--checkpoint-key", keyFile, "--resume", file, "--approve", "--by", "alice"); r.code != 0 {
		t.Errorf("with its key: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// concurrentResumes starts n resumes of one checkpoint at once, as real processes,
// and returns their results.
func concurrentResumes(t *testing.T, n int, args ...string) []result {
	t.Helper()
	type proc struct {
		cmd            *exec.Cmd
		stdout, stderr bytes.Buffer
	}
	procs := make([]*proc, n)
	for i := range procs {
		p := &proc{cmd: exec.Command(wardenBinary(t), append(args, "--by", fmt.Sprintf("p%d", i))...)}
		p.cmd.Dir, p.cmd.Env = t.TempDir(), minimalEnv()
		p.cmd.Stdout, p.cmd.Stderr = &p.stdout, &p.stderr
		procs[i] = p
	}
	for _, p := range procs {
		if err := p.cmd.Start(); err != nil {
			t.Fatal(err)
		}
	}
	out := make([]result, n)
	for i, p := range procs {
		err := p.cmd.Wait()
		code := 0
		if ee, ok := err.(*exec.ExitError); ok {
			code = ee.ExitCode()
		} else if err != nil {
			t.Fatal(err)
		}
		out[i] = result{stdout: p.stdout.String(), stderr: p.stderr.String(), code: code}
	}
	return out
}

// rounds is how many times each concurrency test pauses and resumes.
func rounds() int {
	if testing.Short() {
		return 5
	}
	return 30
}

// "Of any number of concurrent resumes exactly one proceeds, the others are refused":
// five `warden run --resume ID --approve` processes started together, 30 times, for a
// checkpoint file, a SQLite store and PostgreSQL. The tool runs once each round.
func TestRunConcurrentResumesProceedOnce(t *testing.T) {
	const resumers = 5
	kinds := []struct {
		name string
		dsn  func(t *testing.T) string
	}{{"file", nil}}
	for _, k := range testStores() {
		kinds = append(kinds, struct {
			name string
			dsn  func(t *testing.T) string
		}{k.name, k.dsn})
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Setenv("WARDEN_STORE", "")
			dir := runFixture(t)
			cfg := filepath.Join(dir, "pause.yaml")
			log := filepath.Join(dir, "workspace", "log.txt")
			var dsn string
			if k.dsn != nil {
				dsn = k.dsn(t)
			}
			refusal := regexp.MustCompile(`^warden: checkpoint \S+(: outcome unknown: a resume claimed it \(approved by p\d at [0-9TZ:-]+, process \d+ on .+\) and has not finished; it is still running, or it stopped, and editor may have run\. A checkpoint resumes once, so it is not resumed again: check whether editor ran before running the task again| was already resumed \(approved by p\d at [0-9TZ:-]+\); a checkpoint resumes once)\n$`)
			proceeded, refused := 0, 0
			for round := range rounds() {
				os.Remove(log)
				args := []string{"run", "--config", cfg}
				var name string
				if dsn == "" {
					name, _ = pauseRun(t, dir)
				} else {
					args = append(args, "--store", dsn)
					name = pauseToStore(t, dir, "--store", dsn)
				}
				args = append(args, "--resume", name, "--approve")
				results := concurrentResumes(t, resumers, args...)
				ok := 0
				for _, r := range results {
					switch {
					case r.code == 0:
						ok++
					case r.code == exitUsage && refusal.MatchString(r.stderr):
						refused++
					default:
						t.Errorf("round %d: exit %d, stderr %q\n%s", round, r.code, r.stderr, r.stdout)
					}
				}
				proceeded += ok
				got, _ := os.ReadFile(log)
				if ok != 1 || string(got) != "approved line\n" {
					t.Fatalf("round %d: %d of %d concurrent resumes proceeded, log.txt %q; want exactly one and the line once", round, ok, resumers, got)
				}
			}
			t.Logf("%s: %d rounds of %d concurrent resumes: %d proceeded (one per round), %d refused; the tool ran %d times", k.name, rounds(), resumers, proceeded, refused, proceeded)
		})
	}
}

// killServer is a model API whose first answer calls the editor (the run pauses) and
// whose next request, made by a resumed run after the approved call ran, never gets an
// answer: the test kills the process then.
type killServer struct {
	*httptest.Server
	mu      sync.Mutex
	n       int
	reached chan struct{}
}

func newKillServer(t *testing.T) *killServer {
	s := &killServer{reached: make(chan struct{}, 1)}
	s.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		s.mu.Lock()
		s.n++
		n := s.n
		s.mu.Unlock()
		if n > 1 {
			s.reached <- struct{}{}
			<-r.Context().Done() // until the client dies
			return
		}
		w.Header().Set("Content-Type", "application/json")
		io.WriteString(w, `{"id":"msg_01","type":"message","role":"assistant","model":"claude-test",
			"content":[{"type":"tool_use","id":"toolu_01","name":"editor","input":{"file_path":"log.txt","action":"append","content":"approved line\n"}}],
			"stop_reason":"tool_use","stop_sequence":null,"usage":{"input_tokens":10,"output_tokens":10}}`)
	}))
	t.Cleanup(s.Close)
	return s
}

// "A resume that dies after its tool ran cannot be resumed again into a second
// execution (record the claim, report "outcome unknown")": the resumed process is
// killed (SIGKILL) after the approved call ran and before the run ended; resuming
// again is refused, naming who claimed it and when, and the call ran once.
func TestRunKilledResumeIsOutcomeUnknown(t *testing.T) {
	kinds := []struct {
		name string
		dsn  func(t *testing.T) string
	}{{"file", nil}}
	for _, k := range testStores() {
		kinds = append(kinds, struct {
			name string
			dsn  func(t *testing.T) string
		}{k.name, k.dsn})
	}
	for _, k := range kinds {
		t.Run(k.name, func(t *testing.T) {
			t.Setenv("WARDEN_STORE", "")
			dir := runFixture(t)
			srv := newKillServer(t)
			cfg := filepath.Join(dir, "killed.yaml")
			writeFile(t, cfg, "provider:\n  name: anthropic\n  model: claude-test\n  base_url: "+srv.URL+"\n  max_tokens: 64\npolicy: policy.yaml\nworkspace: workspace\ncheckpoint_dir: checkpoints\n")
			t.Setenv("ANTHROPIC_API_KEY", "sk-ant-test")
			args := []string{"run", "--config", cfg}
			var dsn string
			if k.dsn != nil {
				dsn = k.dsn(t)
				args = append(args, "--store", dsn)
			}
			r := runWarden(t, append(args, "Append a line to log.txt")...)
			if r.code != exitAsk {
				t.Fatalf("pause: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			var name string
			if m := storedCheckpointLine.FindStringSubmatch(r.stdout); m != nil {
				name = m[1]
			} else {
				name = checkpointLine.FindStringSubmatch(r.stdout)[1]
			}
			args = append(args, "--resume", name, "--approve", "--by", "alice")

			cmd := exec.Command(wardenBinary(t), args...)
			cmd.Dir, cmd.Env = t.TempDir(), append(minimalEnv(), "ANTHROPIC_API_KEY=sk-ant-test")
			var stdout bytes.Buffer
			cmd.Stdout = &stdout
			if err := cmd.Start(); err != nil {
				t.Fatal(err)
			}
			select {
			case <-srv.reached:
			case <-time.After(time.Minute):
				cmd.Process.Kill()
				cmd.Wait()
				t.Fatalf("the resumed run never asked the model again:\n%s", stdout.String())
			}
			// The approved call ran; the run has not ended.
			if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
				t.Fatalf("log.txt %q before the kill", got)
			}
			if err := cmd.Process.Signal(syscall.SIGKILL); err != nil {
				t.Fatal(err)
			}
			cmd.Wait()
			pid := cmd.Process.Pid

			// The claim is what the killed process left.
			var claim checkpoint.Claim
			if k.dsn == nil {
				data, _ := os.ReadFile(name)
				claim = readClaim(t, checkpoint.ClaimFileOf(name, openCheckpoint(t, data).ID))
			} else {
				data, err := storedCheckpoint(t, dsn, name)
				if err != nil || json.Unmarshal(data, &claim) != nil {
					t.Fatalf("stored: %v\n%s", err, data)
				}
			}
			if claim.State != "claimed" || claim.PID != pid || claim.By != "alice" {
				t.Fatalf("claim %+v, want claimed by alice in process %d", claim, pid)
			}
			host, _ := os.Hostname()
			want := "warden: checkpoint " + name + ": outcome unknown: a resume claimed it (approved by alice at " + claim.ClaimedAt.Format(time.RFC3339) +
				fmt.Sprintf(", process %d on %s)", pid, host) + " and has not finished; it is still running, or it stopped, and editor may have run. A checkpoint resumes once, so it is not resumed again: check whether editor ran before running the task again\n"
			for _, verdict := range []string{"--approve", "--decline"} {
				again := append(append([]string(nil), args[:len(args)-3]...), verdict, "--by", "bob")
				r := execWardenEnv(t, t.TempDir(), []string{"ANTHROPIC_API_KEY=sk-ant-test"}, again...)
				if r.code != exitUsage || r.stderr != want || r.stdout != "" {
					t.Errorf("resume %s after the kill: exit %d, stdout %q, stderr\n%q\nwant\n%q", verdict, r.code, r.stdout, r.stderr, want)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
				t.Errorf("log.txt %q: the call ran again", got)
			}
		})
	}
}

// A stored checkpoint resumes once, and the store shows who resumed it; a resume whose
// checkpoint was replaced between its check and its claim runs nothing.
func TestRunStoredClaimRecords(t *testing.T) {
	t.Setenv("WARDEN_STORE", "")
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	dsn := "sqlite://" + filepath.Join(t.TempDir(), "w.db")
	id := pauseToStore(t, dir, "--store", dsn)
	r := runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", id, "--decline", "--by", "bob", "--note", "no")
	if r.code != 0 {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	data, err := storedCheckpoint(t, dsn, id)
	if err != nil {
		t.Fatal(err)
	}
	var c checkpoint.Claim
	if err := json.Unmarshal(data, &c); err != nil || c.Format != checkpoint.ClaimFormat || c.State != "resumed" || c.Decision != "declined" || c.By != "bob" || c.Checkpoint != id || c.Tool != "editor" {
		t.Errorf("stored claim %+v, %v", c, err)
	}
	r = runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", id, "--approve", "--by", "mallory")
	if want := "warden: checkpoint " + id + " was already resumed (declined by bob at " + c.ClaimedAt.Format(time.RFC3339) + "); a checkpoint resumes once\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	// The marker older versions stored still refuses.
	putStoredCheckpoint(t, dsn, "ckpt_0123456789ab", []byte(`{"resumed":true,"decision":"approved","by":"carol","at":"2026-01-02T03:04:05Z"}`))
	r = runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", "ckpt_0123456789ab", "--approve", "--by", "mallory")
	if want := "warden: checkpoint ckpt_0123456789ab was already resumed (approved by carol at 2026-01-02T03:04:05Z); a checkpoint resumes once\n"; r.code != exitUsage || r.stderr != want {
		t.Errorf("old marker: exit %d, stderr %q", r.code, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); !os.IsNotExist(err) {
		t.Error("a call ran")
	}
}

// A checkpoint resumes only from where the pause wrote it: a renamed copy in the same
// directory is refused before and after the original resumed.
func TestRunRenamedCheckpointShareItsClaim(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	file, _ := pauseRun(t, dir)
	data, _ := os.ReadFile(file)
	id := openCheckpoint(t, data).ID
	copyFile := filepath.Join(filepath.Dir(file), "copy.json")
	writeFile(t, copyFile, string(data))
	want := copyFile + ": this checkpoint was written to " + file + " and resumes only from there: a copy or a link elsewhere is refused, or the checkpoint could run twice; nothing ran (resume " + file + ")\n"
	if r := runWarden(t, "run", "--config", cfg, "--resume", copyFile, "--approve", "--by", "mallory"); r.code != exitUsage || r.stderr != want {
		t.Errorf("before: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "alice"); r.code != 0 {
		t.Fatalf("exit %d\n%s", r.code, r.stderr)
	}
	c := readClaim(t, filepath.Join(filepath.Dir(file), "warden-checkpoint-"+id+".claim.json"))
	if c.State != checkpoint.StateResumed {
		t.Errorf("claim %+v", c)
	}
	if r := runWarden(t, "run", "--config", cfg, "--resume", copyFile, "--approve", "--by", "mallory"); r.code != exitUsage || r.stderr != want {
		t.Errorf("after: exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
		t.Errorf("log.txt %q", got)
	}
}

// Runs that create the key at the same time agree on one key: the file appears whole,
// once.
func TestRunCheckpointKeyCreatedOnce(t *testing.T) {
	file := filepath.Join(t.TempDir(), "warden", "checkpoint.key")
	const n = 8
	keys := make([][]byte, n)
	errs := make([]error, n)
	var wg sync.WaitGroup
	start := make(chan struct{})
	for i := range n {
		wg.Go(func() {
			<-start
			keys[i], errs[i] = checkpoint.LoadKey(file, true)
		})
	}
	close(start)
	wg.Wait()
	for i := range n {
		if errs[i] != nil || !bytes.Equal(keys[i], keys[0]) || len(keys[i]) != seal.MinKeyLen {
			t.Errorf("caller %d: key %x, %v; want the same 32-byte key as caller 0 (%x)", i, keys[i], errs[i], keys[0])
		}
	}
	if left, _ := filepath.Glob(filepath.Join(filepath.Dir(file), ".checkpoint-key-*")); len(left) != 0 {
		t.Errorf("temporary files left: %v", left)
	}
	fi, err := os.Stat(filepath.Dir(file))
	if err != nil || fi.Mode().Perm() != 0o700 {
		t.Errorf("key directory: %v, %v; want mode 0700", fi.Mode().Perm(), err)
	}
}

// A key inside the workspace is refused before anything runs: the run's own tools work
// there, and whoever reads the key can forge a checkpoint.
func TestRunCheckpointKeyInsideTheWorkspaceIsRefused(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	keyFile := filepath.Join(dir, "workspace", "sub", "checkpoint.key")
	r := runWarden(t, "run", "--config", cfg, "--checkpoint-key", keyFile, "Append a line to log.txt")
	ws, err := filepath.EvalSymlinks(filepath.Join(dir, "workspace"))
	if err != nil {
		t.Fatal(err)
	}
	want := "warden: the checkpoint key " + keyFile + " is inside the workspace " + ws + ", where the run's tools could read or replace it: keep the key outside the workspace (--checkpoint-key FILE or $WARDEN_CHECKPOINT_KEY_FILE), or choose another workspace\n"
	if r.code != exitUsage || !strings.HasSuffix(r.stderr, want) {
		t.Errorf("exit %d, stderr %q; want %d and %q", r.code, r.stderr, exitUsage, want)
	}
	if _, err := os.Stat(keyFile); err == nil {
		t.Error("a key was created inside the workspace")
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "log.txt")); err == nil {
		if b, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); strings.Contains(string(b), "approved line") {
			t.Error("the run went on")
		}
	}
}

// Issue 13: "Approved carries the digest of the arguments the person was shown; a
// mismatch is refused." --digest names the approval digest the pause printed; another
// one refuses the resume before anything is claimed or run.
func TestRunApproveDigestMustMatch(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "pause.yaml")
	file, _ := pauseRun(t, dir)
	other := "sha256:" + strings.Repeat("0", 64)
	r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--digest", other, "--by", "alice")
	want := "warden: " + file + ": --digest " + other + " is not this checkpoint's approval digest (" + pauseApproval + "): the pending call is not the one you were shown, so nothing ran; look at it again and approve that digest\n"
	if r.code != exitUsage || r.stderr != want {
		t.Errorf("exit %d, stderr %q, want %q", r.code, r.stderr, want)
	}
	noClaim(t, file)
	if r := runWarden(t, "run", "--config", cfg, "--resume", file, "--decline", "--digest", pauseApproval, "--by", "alice"); r.code != exitUsage || !strings.Contains(r.stderr, "--digest is only for --approve") {
		t.Errorf("--digest with --decline: exit %d, stderr %q", r.code, r.stderr)
	}
	if r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--digest", pauseApproval, "--by", "alice"); r.code != 0 {
		t.Errorf("the printed digest: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
		t.Errorf("log.txt %q", got)
	}
}
