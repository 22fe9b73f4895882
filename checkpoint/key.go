package checkpoint

// This file is the checkpoint key: where it is, how it is created and read.

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/internal/seal"
)

// KeyEnv names the key file when --checkpoint-key is not given.
const KeyEnv = "WARDEN_CHECKPOINT_KEY_FILE"

// KeyFile is the key file: the flag, else $WARDEN_CHECKPOINT_KEY_FILE, else
// <user config dir>/warden/checkpoint.key.
func KeyFile(flag string) (string, error) {
	if flag != "" {
		return flag, nil
	}
	if env := os.Getenv(KeyEnv); env != "" {
		return env, nil
	}
	dir, err := os.UserConfigDir()
	if err != nil {
		return "", refusef("no place for the checkpoint key (%v): name a key file with --checkpoint-key FILE or $%s", err, KeyEnv)
	}
	return filepath.Join(dir, "warden", "checkpoint.key"), nil
}

// LoadKey reads the key file: 32 or more bytes in hex, readable by its owner
// only. With create, a missing file is created with a new random key (two runs that
// both create it agree on one key: the file appears whole, by a link, or not at all).
func LoadKey(file string, create bool) ([]byte, error) {
	key, err := readKey(file)
	if errors.Is(err, fs.ErrNotExist) && create {
		if err = createKey(file); err == nil || errors.Is(err, fs.ErrExist) {
			key, err = readKey(file)
		}
	}
	switch {
	case errors.Is(err, fs.ErrNotExist):
		return nil, refusef("no checkpoint key at %s: a checkpoint resumes only with the key it was sealed with; pass the key file the run paused with in --checkpoint-key or $%s", file, KeyEnv)
	case err != nil:
		return nil, refusef("checkpoint key %s: %v", file, err)
	}
	return key, nil
}

// KeyOutsideWorkspace refuses a checkpoint key inside the workspace: the run's own tools
// (reader, editor, search, bash) work there, and whoever reads the key can forge a
// checkpoint, whoever replaces it can make every paused run unresumable.
func KeyOutsideWorkspace(keyFile, workspace string) error {
	abs, err := filepath.Abs(keyFile)
	if err != nil {
		return refusef("checkpoint key %s: %v", keyFile, err)
	}
	if real, err := hook.ResolvePath(abs); err == nil {
		abs = real
	}
	rel, err := filepath.Rel(workspace, abs)
	if err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) {
		return refusef("the checkpoint key %s is inside the workspace %s, where the run's tools could read or replace it: keep the key outside the workspace (--checkpoint-key FILE or $%s), or choose another workspace", keyFile, workspace, KeyEnv)
	}
	return nil
}

func readKey(file string) ([]byte, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	// Fail closed: whoever can read the key can forge a checkpoint.
	if perm := fi.Mode().Perm(); perm&0o077 != 0 {
		return nil, fmt.Errorf("readable by others (mode %#o): make it readable by its owner only (chmod 600 %s)", perm, file)
	}
	data, err := io.ReadAll(io.LimitReader(f, 4096))
	if err != nil {
		return nil, err
	}
	key, err := hex.DecodeString(strings.TrimSpace(string(data)))
	if err != nil {
		return nil, fmt.Errorf("not a key: want %d or more bytes in hex (%v)", seal.MinKeyLen, err)
	}
	if err := seal.CheckKey(key); err != nil {
		return nil, err
	}
	return key, nil
}

func createKey(file string) error {
	if err := os.MkdirAll(filepath.Dir(file), 0o700); err != nil {
		return err
	}
	key := make([]byte, seal.MinKeyLen)
	if _, err := rand.Read(key); err != nil {
		return err
	}
	tmp, err := os.CreateTemp(filepath.Dir(file), ".checkpoint-key-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.WriteString(hex.EncodeToString(key) + "\n"); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	// CreateTemp makes the file 0600; Link fails if the key exists (another run made
	// it first, and its key is the one to use).
	return os.Link(tmp.Name(), file)
}
