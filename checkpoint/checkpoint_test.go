package checkpoint

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
	_ "github.com/wardenhq/warden/store/sqlite" // the store the tests keep checkpoints in
)

// newKey creates a key file in a directory of its own and returns the file and key.
func newKey(t *testing.T) (string, []byte) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "keys", "checkpoint.key")
	key, err := LoadKey(file, true)
	if err != nil {
		t.Fatal(err)
	}
	return file, key
}

// pending is the pending call of the test checkpoints.
var pending = warden.PendingDecision{Tool: "editor", Question: "write?", Args: warden.MustParseArgs(`{"file_path":"a.txt"}`)}

// writeCheckpoint seals a checkpoint kept in dir and writes it there, as a pause does.
func writeCheckpoint(t *testing.T, dir string, key []byte) string {
	t.Helper()
	dir, err := filepath.EvalSymlinks(dir)
	if err != nil {
		t.Fatal(err)
	}
	file := filepath.Join(dir, "warden-checkpoint-0123456789ab.json")
	data, err := Seal(&Checkpoint{ID: "0123456789ab", Kept: "file:" + file, Workspace: "/w", Pending: pending, Checkpoint: json.RawMessage(`{"agent":1}`)}, key)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(file, data, 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// refused checks that err is a Refusal whose text holds want.
func refused(t *testing.T, what string, err error, want string) {
	t.Helper()
	var r *Refusal
	if !errors.As(err, &r) || !strings.Contains(err.Error(), want) {
		t.Errorf("%s: %v (%T); want a refusal holding %q", what, err, err, want)
	}
}

// TestSealAndParse: what Seal writes Parse reads back; any change to it, another key
// or an unsealed checkpoint is refused.
func TestSealAndParse(t *testing.T) {
	keyFile, key := newKey(t)
	file := writeCheckpoint(t, t.TempDir(), key)
	data, _ := os.ReadFile(file)
	cp, err := Parse("cp", data, key, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	if cp.ID != "0123456789ab" || cp.Workspace != "/w" || cp.Pending.Tool != "editor" || cp.Format != Format || cp.Stored() {
		t.Errorf("checkpoint %+v", cp)
	}
	altered := bytes.Replace(data, []byte(`"/w"`), []byte(`"/x"`), 1)
	if _, err := Parse("cp", altered, key, keyFile); err == nil || !strings.Contains(err.Error(), "the checkpoint was altered after the pause") {
		t.Errorf("altered: %v", err)
	}
	_, other := newKey(t)
	if _, err := Parse("cp", data, other, "other.key"); err == nil || !strings.Contains(err.Error(), "sealed with another checkpoint key") {
		t.Errorf("another key: %v", err)
	}
	if _, err := Parse("cp", []byte(`{"format":"warden.run.checkpoint/v1"}`), key, keyFile); err == nil || !strings.Contains(err.Error(), "the checkpoint has no seal") {
		t.Errorf("unsealed: %v", err)
	}
}

// TestReadFileOnlyWhereKept: a checkpoint file resumes only from where the pause kept
// it: a copy or a link elsewhere is refused.
func TestReadFileOnlyWhereKept(t *testing.T) {
	keyFile, key := newKey(t)
	file := writeCheckpoint(t, t.TempDir(), key)
	if _, err := ReadFile(file, key, keyFile); err != nil {
		t.Fatal(err)
	}
	elsewhere := t.TempDir()
	data, _ := os.ReadFile(file)
	cp := filepath.Join(elsewhere, filepath.Base(file))
	if err := os.WriteFile(cp, data, 0o600); err != nil {
		t.Fatal(err)
	}
	_, err := ReadFile(cp, key, keyFile)
	refused(t, "a copy", err, "resumes only from there")
	link := filepath.Join(elsewhere, "link.json")
	if err := os.Symlink(file, link); err != nil {
		t.Fatal(err)
	}
	if _, err := ReadFile(link, key, keyFile); err != nil {
		t.Errorf("a link to the kept file itself: %v", err) // it resolves to where it was kept
	}
	_, err = ReadFile(filepath.Join(elsewhere, "missing.json"), key, keyFile)
	refused(t, "a missing file", err, "cannot read the checkpoint")
}

// TestClaimFileOnce: a checkpoint file is claimed once; a claim that was not finished
// refuses every later resume (outcome unknown); a finished resume removes the file
// and is reported as such; a refused resume leaves the checkpoint as it was.
func TestClaimFileOnce(t *testing.T) {
	keyFile, key := newKey(t)
	ctx := context.Background()
	file := writeCheckpoint(t, t.TempDir(), key)
	cp, err := ReadFile(file, key, keyFile)
	if err != nil {
		t.Fatal(err)
	}
	c, err := ClaimFile(file, cp, NewClaim(file, pending, "approved", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ClaimFile(file, cp, NewClaim(file, pending, "approved", "bob"))
	refused(t, "a second claim", err, "outcome unknown: a resume claimed it (approved by alice")
	_, err = ReadFile(file, key, keyFile)
	refused(t, "reading a claimed checkpoint", err, "outcome unknown")

	if err := c.Finish(ctx, StateRefused, "the Guard refused"); err != nil {
		t.Fatal(err)
	}
	if cp, err = ReadFile(file, key, keyFile); err != nil {
		t.Fatalf("after a refused resume the checkpoint stays: %v", err)
	}
	c, err = ClaimFile(file, cp, NewClaim(file, pending, "declined", "carol"))
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Finish(ctx, StateResumed, ""); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(file); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the resumed checkpoint file is still there: %v", err)
	}
	_, err = ReadFile(file, key, keyFile)
	refused(t, "a resumed checkpoint", err, "was already resumed (declined by carol at ")
}

// TestKeyFile: a key is created readable by its owner only; one readable by others, a
// missing one (without create) and one inside the workspace are refused.
func TestKeyFile(t *testing.T) {
	keyFile, key := newKey(t)
	fi, err := os.Stat(keyFile)
	if err != nil || fi.Mode().Perm() != 0o600 || len(key) < 32 {
		t.Fatalf("key %s: %v, %v, %d bytes", keyFile, fi.Mode(), err, len(key))
	}
	again, err := LoadKey(keyFile, true)
	if err != nil || !bytes.Equal(again, key) {
		t.Errorf("loading again: %v (same key: %v)", err, bytes.Equal(again, key))
	}
	if err := os.Chmod(keyFile, 0o644); err != nil {
		t.Fatal(err)
	}
	_, err = LoadKey(keyFile, false)
	refused(t, "a key readable by others", err, "readable by others")
	_, err = LoadKey(filepath.Join(t.TempDir(), "none.key"), false)
	refused(t, "a missing key", err, "no checkpoint key at")

	ws := filepath.Dir(keyFile)
	refused(t, "a key inside the workspace", KeyOutsideWorkspace(keyFile, ws), "is inside the workspace")
	if err := KeyOutsideWorkspace(keyFile, t.TempDir()); err != nil {
		t.Errorf("a key outside the workspace: %v", err)
	}
	t.Setenv(KeyEnv, "/from/env.key")
	if f, err := KeyFile(""); err != nil || f != "/from/env.key" {
		t.Errorf("KeyFile from $%s = %q, %v", KeyEnv, f, err)
	}
	if f, err := KeyFile("/flag.key"); err != nil || f != "/flag.key" {
		t.Errorf("KeyFile from the flag = %q, %v", f, err)
	}
}

// TestStoredOnce: a stored checkpoint resumes only under the id it was kept as, and is
// claimed once.
func TestStoredOnce(t *testing.T) {
	keyFile, key := newKey(t)
	ctx := context.Background()
	st, err := store.Open(ctx, "sqlite://"+filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	id := StoredPrefix + "0123456789ab"
	data, err := Seal(&Checkpoint{ID: "0123456789ab", Kept: "store:" + id, Pending: pending, Checkpoint: json.RawMessage(`{}`)}, key)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{id, StoredPrefix + "copy"} {
		if err := st.PutCheckpoint(ctx, k, data); err != nil {
			t.Fatal(err)
		}
	}
	_, err = GetStored(ctx, st, StoredPrefix+"unknown", key, keyFile)
	refused(t, "an unknown id", err, "no checkpoint "+StoredPrefix+"unknown in the store")
	_, err = GetStored(ctx, st, StoredPrefix+"copy", key, keyFile)
	refused(t, "a copy under another id", err, "a copy of it is not resumed")
	cp, err := GetStored(ctx, st, id, key, keyFile)
	if err != nil || !cp.Stored() {
		t.Fatalf("GetStored: %v", err)
	}
	c, err := ClaimStored(ctx, st, id, cp, NewClaim(id, pending, "approved", "alice"))
	if err != nil {
		t.Fatal(err)
	}
	_, err = ClaimStored(ctx, st, id, cp, NewClaim(id, pending, "approved", "bob"))
	refused(t, "a second claim", err, "outcome unknown")
	if err := c.Finish(ctx, StateResumed, ""); err != nil {
		t.Fatal(err)
	}
	_, err = GetStored(ctx, st, id, key, keyFile)
	refused(t, "a resumed checkpoint", err, "was already resumed (approved by alice at ")
}
