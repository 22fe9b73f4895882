package main

// Attacks on issue 13's sealed, single-use checkpoints in warden run (attacker 2).
//
// Issue 13: "Resuming claims the checkpoint atomically before anything runs ...: of
// any number of concurrent resumes exactly one proceeds, the others are refused; a
// resume that dies after its tool ran cannot be resumed again into a second execution."
// run.go's help: "A checkpoint resumes once."

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden/checkpoint"
)

// Found by an attack, and fixed (the checkpoint seals where it was kept): the claim of
// a checkpoint file lived next to the path it was resumed by,
// so the same sealed checkpoint resumes once per directory. A symbolic link to it from
// another directory resumes it (and "finish" removes the link, not the checkpoint),
// then the original resumes again: the approved write runs twice. A copy in another
// directory does the same. The seal covers the content only, not where the file is.
func TestAttack2CheckpointResumesOncePerDirectory(t *testing.T) {
	for _, via := range []string{"symlink", "copy"} {
		t.Run(via, func(t *testing.T) {
			dir := runFixture(t)
			cfg := filepath.Join(dir, "pause.yaml")
			file, _ := pauseRun(t, dir)
			other := filepath.Join(t.TempDir(), filepath.Base(file))
			if via == "symlink" {
				if err := os.Symlink(file, other); err != nil {
					t.Fatal(err)
				}
			} else {
				data, err := os.ReadFile(file)
				if err != nil {
					t.Fatal(err)
				}
				if err := os.WriteFile(other, data, 0o600); err != nil {
					t.Fatal(err)
				}
			}
			r := runWarden(t, "run", "--config", cfg, "--resume", other, "--approve", "--by", "alice")
			if via == "copy" {
				// A copy is refused where it lies; the original resumes, once.
				want := "this checkpoint was written to " + file + " and resumes only from there"
				if r.code != exitUsage || !strings.Contains(r.stderr, want) {
					t.Fatalf("resume of a copy: exit %d, stderr %q; want exit 2 and %q", r.code, r.stderr, want)
				}
				if r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "alice"); r.code != 0 {
					t.Fatalf("resume of the original: exit %d\n%s%s", r.code, r.stdout, r.stderr)
				}
			} else if r.code != 0 {
				t.Fatalf("first resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			r = runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "bob")
			if r.code != exitUsage || !strings.Contains(r.stderr, "was already resumed") {
				t.Errorf("second resume of the same checkpoint: exit %d, stderr %q; want exit 2, \"was already resumed\"", r.code, r.stderr)
			}
			if via == "copy" {
				r = runWarden(t, "run", "--config", cfg, "--resume", other, "--approve", "--by", "bob")
				if r.code != exitUsage {
					t.Errorf("the copy after the original resumed: exit %d, stderr %q", r.code, r.stderr)
				}
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
				t.Errorf("log.txt %q, want the approved write once", got)
			}
		})
	}
}

// Found by an attack, and fixed (the checkpoint seals where it was kept): a checkpoint
// kept in a store is "the same bytes as the file", so whoever read it from the store
// before its resume (run.go: "Anyone who can read the store can read the checkpoint")
// wrote it to a file and resumed it again after the stored one was claimed and
// resumed: the approved write ran twice.
func TestAttack2StoredCheckpointResumesAgainAsFile(t *testing.T) {
	for _, k := range testStores() {
		t.Run(k.name, func(t *testing.T) {
			_, dir, cfg, id, data := resumedStoredCheckpoint(t, k)
			file := filepath.Join(t.TempDir(), "warden-checkpoint-"+strings.TrimPrefix(id, checkpoint.StoredPrefix)+".json")
			if err := os.WriteFile(file, data, 0o600); err != nil {
				t.Fatal(err)
			}
			r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "bob")
			if r.code != exitUsage {
				t.Errorf("the stored checkpoint resumed again from a file: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
				t.Errorf("log.txt %q, want the approved write once", got)
			}
		})
	}
}

// Found by an attack, and fixed (the call is shown whole, with its approval digest, and
// --digest binds the approval to it): the pause printed the pending call clipped to 200 characters and no digest,
// and --approve takes no digest, so a person approves arguments they were not shown.
// Here the model puts a long content first and the file it writes last: the printed
// call never names the file, and approving writes it. Issue 13: "Approved carries the
// digest of the arguments the person was shown".
func TestAttack2ApprovalOfArgumentsNotShown(t *testing.T) {
	dir := runFixture(t)
	cfg := filepath.Join(dir, "hidden.yaml")
	long := strings.Repeat("harmless text ", 20)
	writeFile(t, cfg, `provider:
  name: scripted
  replies:
    - calls:
        - {id: c1, name: editor, args: {content: "`+long+`", action: append, file_path: hidden-target.txt}}
    - text: "Done."
policy: policy.yaml
workspace: workspace
checkpoint_dir: checkpoints
`)
	r := runWarden(t, "run", "--config", cfg, "write")
	if r.code != exitAsk {
		t.Fatalf("exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	pauseText := r.stdout[strings.Index(r.stdout, "\npaused:"):]
	if !strings.Contains(pauseText, "hidden-target.txt") {
		t.Errorf("the question shown before approving never names the file the call writes:\n%s", pauseText)
	}
	file := checkpointLine.FindStringSubmatch(r.stdout)[1]
	if r := runWarden(t, "run", "--config", cfg, "--resume", file, "--approve", "--by", "alice"); r.code != 0 {
		t.Fatalf("resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := os.Stat(filepath.Join(dir, "workspace", "hidden-target.txt")); err == nil {
		t.Log("the approval wrote hidden-target.txt, a file no output named before the approval")
	}
}

// Found by an attack, and fixed (a key inside the workspace is refused): the checkpoint key file was not among the files the run protects: with the
// key inside the workspace (--checkpoint-key or $WARDEN_CHECKPOINT_KEY_FILE naming
// it), the agent's own reader returns the key to the model (and the editor may
// overwrite it). Whoever holds the key forges any checkpoint: run.go itself says
// "whoever can read the key can forge a checkpoint".
func TestAttack2AgentReadsTheCheckpointKey(t *testing.T) {
	dir := runFixture(t)
	keyFile := filepath.Join(dir, "workspace", "checkpoint.key")
	if _, err := checkpoint.LoadKey(keyFile, true); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(dir, "steal.yaml")
	writeFile(t, cfg, `provider:
  name: scripted
  replies:
    - calls:
        - {id: c1, name: reader, args: {path: checkpoint.key}}
    - text: "Done."
policy: policy.yaml
workspace: workspace
checkpoint_dir: checkpoints
`)
	r := runWarden(t, "run", "--config", cfg, "--checkpoint-key", keyFile, "read the key")
	if strings.Contains(r.stdout, "→ reader {\"path\":\"checkpoint.key\"}\n  allowed by *\n  ← 65 chars\n") {
		t.Errorf("the model read the checkpoint key (exit %d):\n%s", r.code, r.stdout)
	}
}

// Found by an attack, and fixed (the stored id must be the sealed one): a stored checkpoint's claim is per store row, and the resume never checks
// that the row's id is the sealed id (ckpt_<ID>). Whoever may write the store (every
// `warden run` that shares it does) copies the checkpoint under another id before its
// resume, and after the claimed resume the copy resumes again: the approved write runs
// twice.
func TestAttack2StoredCheckpointCopiedToAnotherID(t *testing.T) {
	for _, k := range testStores() {
		t.Run(k.name, func(t *testing.T) {
			// The row as it was before its resume, copied under another id.
			dsn, dir, cfg, _, data := resumedStoredCheckpoint(t, k)
			const other = "ckpt_000000000000"
			putStoredCheckpoint(t, dsn, other, data)
			r := runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", other, "--approve", "--by", "bob")
			if r.code != exitUsage {
				t.Errorf("the checkpoint resumed again under another id: exit %d\n%s%s", r.code, r.stdout, r.stderr)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
				t.Errorf("log.txt %q, want the approved write once", got)
			}
		})
	}
}

// Held: writing the original checkpoint back over its claimed row does not unclaim it
// (PutCheckpoint keeps the claimed column): the resume is refused and nothing runs
// again. (The refusal then says "outcome unknown": the claim record was overwritten,
// so who resumed it is lost, but the refusal is not.)
func TestAttack2StoredCheckpointPutBackStaysClaimed(t *testing.T) {
	for _, k := range testStores() {
		t.Run(k.name, func(t *testing.T) {
			dsn, dir, cfg, id, data := resumedStoredCheckpoint(t, k)
			putStoredCheckpoint(t, dsn, id, data)
			r := runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", id, "--approve", "--by", "bob")
			if r.code != exitUsage || !strings.Contains(r.stderr, "outcome unknown: a resume claimed it") {
				t.Errorf("exit %d, stderr %q; want exit 2, \"outcome unknown\"", r.code, r.stderr)
			}
			if got, _ := os.ReadFile(filepath.Join(dir, "workspace", "log.txt")); string(got) != "approved line\n" {
				t.Errorf("log.txt %q, want the approved write once", got)
			}
		})
	}
}

// resumedStoredCheckpoint pauses pause.yaml into the store k, keeps a copy of the stored
// checkpoint (data), and resumes it once, approved by alice.
func resumedStoredCheckpoint(t *testing.T, k testStore) (dsn, dir, cfg, id string, data []byte) {
	t.Helper()
	dsn = k.dsn(t)
	dir = runFixture(t)
	cfg = filepath.Join(dir, "pause.yaml")
	id = pauseToStore(t, dir, "--store", dsn)
	data, err := storedCheckpoint(t, dsn, id)
	if err != nil {
		t.Fatal(err)
	}
	if r := runWarden(t, "run", "--config", cfg, "--store", dsn, "--resume", id, "--approve", "--by", "alice"); r.code != 0 {
		t.Fatalf("stored resume: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	return dsn, dir, cfg, id, data
}
