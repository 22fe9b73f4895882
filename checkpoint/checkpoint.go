// Package checkpoint keeps what a paused warden run leaves for the person who decides:
// the checkpoint (the agent's own checkpoint with the pending call, sealed with the
// checkpoint key), as a file or under an id in a store; the key; and the claim that
// lets a checkpoint resume exactly once.
//
// It is its own package because these are the guarantees a resume rests on (a
// checkpoint that was altered, copied, moved or resumed before never runs again),
// independent of the command line that prints them: the command reads flags, calls
// these functions and maps a [*Refusal] to its exit code.
package checkpoint

import (
	"bytes"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/fileerr"
	"github.com/wardenhq/warden/internal/seal"
)

// A Refusal is an error that refuses a checkpoint, its key or a resume: the
// checkpoint is unknown, altered, copied, claimed, already resumed, or the key is
// missing or unusable. Nothing ran because of it. When Err is a located
// *[warden.ConfigError] it names the file; otherwise it is a sentence.
type Refusal struct {
	Err error
}

func (r *Refusal) Error() string { return r.Err.Error() }
func (r *Refusal) Unwrap() error { return r.Err }

func refuse(err error) error { return &Refusal{Err: err} }

func refusef(format string, args ...any) error {
	return &Refusal{Err: fmt.Errorf(format, args...)}
}

// ToolDefinition is the digest of what a tool is to the model and the policy: its name,
// source, description, input schema and declared capabilities.
func ToolDefinition(t warden.Tool) string {
	// Strings and string slices only: encoding cannot fail.
	b, _ := json.Marshal(struct {
		Name, Source, Description, InputSchema string
		Capabilities                           []warden.Capability
	}{t.Name, t.Source, t.Description, string(t.InputSchema), t.Capabilities})
	sum := sha256.Sum256(b)
	return "sha256:" + hex.EncodeToString(sum[:])
}

// Format is the format of the sealed document (package internal/seal)
// and of its body.
const Format = "warden.run.checkpoint/v2"

// unsealedFormat is the format warden run wrote before checkpoints were
// sealed.
const unsealedFormat = "warden.run.checkpoint/v1"

// Checkpoint is the body of the file a paused run writes: the agent's checkpoint
// (sealed on its own), the question for people reading the file, and the workspace the
// run works in. The whole is sealed with the checkpoint key, so none of it (the
// workspace included) can be changed without the resume refusing it.
type Checkpoint struct {
	Format string `json:"format"`
	// ID names the checkpoint: its claim is warden-checkpoint-<ID>.claim.json.
	ID string `json:"id"`
	// Kept says where the pause kept the checkpoint: "file:<absolute path, links
	// resolved>" or "store:<id>". A checkpoint resumes only from there: a copy or a
	// link elsewhere, a file made from a stored one or a row copied under another id
	// is refused, so no copy can claim (and run) it a second time.
	Kept string `json:"kept"`
	// PendingTool is the digest of the paused tool's definition (ToolDefinition): a
	// resume whose tool is no longer the one the person was asked about (an MCP
	// server changed its description or schema) is refused.
	PendingTool string                 `json:"pending_tool"`
	Config      string                 `json:"config"`
	Workspace   string                 `json:"workspace"`
	Pending     warden.PendingDecision `json:"pending"`
	Checkpoint  json.RawMessage        `json:"checkpoint"`

	raw    []byte // the document as read, for the check after the claim
	stored bool   // read from the store, not a file
}

// Seal returns the document a pause writes: cp sealed under key, indented
// for people.
func Seal(cp *Checkpoint, key []byte) ([]byte, error) {
	cp.Format = Format
	body, err := json.Marshal(cp)
	if err != nil {
		return nil, err
	}
	sealed, err := seal.Seal(key, Format, body)
	if err != nil {
		return nil, err
	}
	var out bytes.Buffer
	if err := json.Indent(&out, sealed, "", "  "); err != nil {
		return nil, err
	}
	out.WriteByte('\n')
	return out.Bytes(), nil
}

var (
	checkpointID       = regexp.MustCompile(`^[0-9a-f]{12}$`)
	checkpointFileName = regexp.MustCompile(`^warden-checkpoint-([0-9a-f]{12})\.json$`)
)

// ReadFile reads the checkpoint file a pause wrote and checks it: its seal under key
// (keyFile names the key in errors), that it is read from where the pause kept it, and
// that no claim exists for it. Every error is a [*Refusal].
func ReadFile(file string, key []byte, keyFile string) (*Checkpoint, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		// A checkpoint that was resumed is gone; its claim says what became of it.
		if m := checkpointFileName.FindStringSubmatch(filepath.Base(file)); m != nil && errors.Is(err, fs.ErrNotExist) {
			if rc, ok := readClaimFile(ClaimFileOf(file, m[1])); ok {
				return nil, rc.refusal(file)
			}
		}
		return nil, refuse(&warden.ConfigError{File: file, Msg: "cannot read the checkpoint: " + fileerr.Text(err), Hint: "pass the file a paused `warden run` wrote; a checkpoint is removed once it is resumed"})
	}
	cp, err := Parse(file, data, key, keyFile)
	if err != nil {
		return nil, refuse(err)
	}
	kept, ok := strings.CutPrefix(cp.Kept, "file:")
	if !ok {
		return nil, refuse(&warden.ConfigError{File: file, Msg: "this checkpoint was kept in a store (" + strings.TrimPrefix(cp.Kept, "store:") + "), not in this file: a copy of it is not resumed, or the checkpoint could run twice", Hint: "resume it from the store it paused with: --store DSN --resume " + strings.TrimPrefix(cp.Kept, "store:")})
	}
	here, err := filepath.Abs(file)
	if err == nil {
		if real, rerr := filepath.EvalSymlinks(here); rerr == nil {
			here = real
		}
	}
	if err != nil || here != kept {
		return nil, refuse(&warden.ConfigError{File: file, Msg: "this checkpoint was written to " + kept + " and resumes only from there: a copy or a link elsewhere is refused, or the checkpoint could run twice; nothing ran", Hint: "resume " + kept})
	}
	if rc, ok := readClaimFile(ClaimFileOf(kept, cp.ID)); ok {
		return nil, rc.refusal(file)
	}
	return cp, nil
}

// Parse checks a checkpoint's seal, then decodes it; file names it in
// errors (a file or a stored checkpoint's id), each a located *[warden.ConfigError].
func Parse(file string, data, key []byte, keyFile string) (*Checkpoint, error) {
	notOurs := func(msg string) error {
		return &warden.ConfigError{File: file, Msg: msg, Hint: "pass the file a paused `warden run` wrote"}
	}
	body, err := seal.Open(key, Format, data)
	var fe *seal.FormatError
	var ke *seal.KeyError
	switch {
	case errors.As(err, &fe) && fe.Got == unsealedFormat:
		return nil, &warden.ConfigError{File: file, Msg: fmt.Sprintf("the checkpoint has no seal (format %q, written before checkpoints were sealed): nothing shows it was not edited, so it is not resumed", fe.Got), Hint: "run the task again"}
	case errors.As(err, &fe):
		return nil, notOurs(fmt.Sprintf("not a warden run checkpoint (format %q, want %q)", fe.Got, fe.Want))
	case errors.As(err, &ke):
		return nil, &warden.ConfigError{File: file, Msg: fmt.Sprintf("the checkpoint was sealed with another checkpoint key (key id %s; %s has key id %s)", ke.Got, keyFile, ke.Want), Hint: "pass the key file the run paused with in --checkpoint-key or $WARDEN_CHECKPOINT_KEY_FILE"}
	case errors.Is(err, seal.ErrMismatch):
		return nil, &warden.ConfigError{File: file, Msg: "the checkpoint was altered after the pause: its seal does not match its content, so it is not resumed and nothing ran", Hint: "pause the run again to get a new checkpoint"}
	case err != nil:
		return nil, notOurs("not a warden run checkpoint: " + err.Error())
	}
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	var cp Checkpoint
	if err := dec.Decode(&cp); err != nil {
		return nil, notOurs("not a warden run checkpoint: " + err.Error())
	}
	if cp.Format != Format || len(cp.Checkpoint) == 0 || !checkpointID.MatchString(cp.ID) {
		return nil, notOurs(fmt.Sprintf("not a warden run checkpoint (format %q, id %q)", cp.Format, cp.ID))
	}
	cp.raw = data
	return &cp, nil
}

// Stored reports whether cp was read from a store (by [GetStored]), not from a file.
func (cp *Checkpoint) Stored() bool { return cp.stored }
