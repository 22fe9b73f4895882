package checkpoint

// This file is the claim: a checkpoint resumes once.

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/wardenhq/warden"
)

// ClaimFormat is the format of a [Claim] record.
const ClaimFormat = "warden.run.claim/v1"

// Claim states.
const (
	StateClaimed = "claimed" // a resume took it; it has not finished (or died)
	StateResumed = "resumed" // the resumed run ended
	StateRefused = "refused" // the resume was refused before anything ran
)

// Claim records who resumed a checkpoint: it is the claim file, or what replaces a
// stored checkpoint.
type Claim struct {
	Format     string    `json:"format"`
	Checkpoint string    `json:"checkpoint"`
	State      string    `json:"state"`
	Tool       string    `json:"tool"`
	Digest     string    `json:"digest"`
	Decision   string    `json:"decision"`
	By         string    `json:"by"`
	PID        int       `json:"pid"`
	Host       string    `json:"host,omitempty"`
	ClaimedAt  time.Time `json:"claimed_at"`
	FinishedAt time.Time `json:"finished_at,omitzero"`
	Note       string    `json:"note,omitempty"`
}

// NewClaim is the claim this process makes when it resumes the checkpoint name with
// the decision verb (approved, declined) by the person by.
func NewClaim(name string, pd warden.PendingDecision, verb, by string) Claim {
	host, _ := os.Hostname()
	return Claim{
		Format: ClaimFormat, Checkpoint: name, State: StateClaimed, Tool: pd.Tool, Digest: pd.Digest,
		Decision: verb, By: by, PID: os.Getpid(), Host: host, ClaimedAt: time.Now().UTC().Truncate(time.Second),
	}
}

func (c Claim) encode() []byte {
	data, _ := json.MarshalIndent(c, "", "  ") // plain fields: cannot fail
	return append(data, '\n')
}

// parseClaim reads a claim record, or the marker older versions stored.
func parseClaim(data []byte) (Claim, bool) {
	var c Claim
	if json.Unmarshal(data, &c) == nil && c.Format == ClaimFormat {
		return c, true
	}
	var old struct {
		Resumed  bool      `json:"resumed"`
		Decision string    `json:"decision"`
		By       string    `json:"by"`
		At       time.Time `json:"at"`
	}
	if json.Unmarshal(data, &old) == nil && old.Resumed {
		return Claim{State: StateResumed, Decision: old.Decision, By: old.By, ClaimedAt: old.At}, true
	}
	return Claim{}, false
}

// refusal is the error for resuming a checkpoint that carries this claim: exit 2.
func (c Claim) refusal(name string) error {
	who := ""
	if c.Decision != "" && c.By != "" {
		who = c.Decision + " by " + c.By
	}
	if !c.ClaimedAt.IsZero() {
		who += " at " + c.ClaimedAt.UTC().Format(time.RFC3339)
	}
	who = strings.TrimSpace(who)
	switch c.State {
	case StateResumed:
		if who != "" {
			who = " (" + who + ")"
		}
		return refusef("checkpoint %s was already resumed%s; a checkpoint resumes once", name, who)
	case StateRefused:
		if who != "" {
			who = " (" + who + ")"
		}
		return refusef("checkpoint %s cannot be resumed: a resume%s was refused before anything ran: %s; pause the run again", name, who, c.Note)
	}
	if c.PID != 0 {
		if who != "" {
			who += ", "
		}
		who += fmt.Sprintf("process %d", c.PID)
		if c.Host != "" {
			who += " on " + c.Host
		}
	}
	if who != "" {
		who = " (" + who + ")"
	}
	tool := "the approved call"
	if c.Tool != "" {
		tool = c.Tool
	}
	// Fail closed: a claim without an end may have run the call; never run it twice.
	return refusef("checkpoint %s: outcome unknown: a resume claimed it%s and has not finished; it is still running, or it stopped, and %s may have run. A checkpoint resumes once, so it is not resumed again: check whether %s ran before running the task again", name, who, tool, tool)
}

// Claimed is a checkpoint this process claimed.
type Claimed interface {
	// Finish records how the resume ended: StateResumed (the call may have run) or
	// StateRefused (nothing ran; note says why).
	Finish(ctx context.Context, state, note string) error
}

// ClaimFileOf is the claim of the checkpoint id next to file.
func ClaimFileOf(file, id string) string {
	return filepath.Join(filepath.Dir(file), "warden-checkpoint-"+id+".claim.json")
}

func readClaimFile(file string) (Claim, bool) {
	data, err := os.ReadFile(file)
	if errors.Is(err, fs.ErrNotExist) {
		return Claim{}, false
	}
	if c, ok := parseClaim(data); ok {
		return c, true
	}
	// Unreadable, or half-written by a resume that died: still a claim (fail closed).
	return Claim{State: StateClaimed}, true
}

// fileClaim is a claim file this process created.
type fileClaim struct {
	file, claimFile string
	rec             Claim
}

// ClaimFile claims a checkpoint file: the claim file is written whole to a temporary
// name, then linked to its name, which fails when a claim exists. So exactly one resume
// creates it, and it never appears half-written.
func ClaimFile(file string, saved *Checkpoint, rec Claim) (Claimed, error) {
	cf := ClaimFileOf(file, saved.ID)
	tmp, err := os.CreateTemp(filepath.Dir(cf), ".warden-claim-*")
	if err != nil {
		return nil, fmt.Errorf("claiming the checkpoint: %w", err)
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(rec.encode())
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return nil, fmt.Errorf("claiming the checkpoint: %w", werr)
	}
	if err := os.Link(tmp.Name(), cf); err != nil {
		if errors.Is(err, fs.ErrExist) {
			c, _ := readClaimFile(cf)
			return nil, c.refusal(file)
		}
		return nil, fmt.Errorf("claiming the checkpoint: %w", err)
	}
	// What was checked must be what is claimed.
	if now, err := os.ReadFile(file); err != nil || !bytes.Equal(now, saved.raw) {
		os.Remove(cf)
		return nil, refusef("checkpoint %s changed while it was being resumed; nothing ran", file)
	}
	return &fileClaim{file: file, claimFile: cf, rec: rec}, nil
}

func (c *fileClaim) Finish(_ context.Context, state, note string) error {
	if state == StateRefused {
		// Nothing ran: the checkpoint stays, unclaimed, as a refused one does.
		return os.Remove(c.claimFile)
	}
	c.rec.State, c.rec.FinishedAt, c.rec.Note = state, time.Now().UTC().Truncate(time.Second), note
	tmp, err := os.CreateTemp(filepath.Dir(c.claimFile), ".warden-claim-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	_, werr := tmp.Write(c.rec.encode())
	if cerr := tmp.Close(); werr == nil {
		werr = cerr
	}
	if werr != nil {
		return werr
	}
	if err := os.Rename(tmp.Name(), c.claimFile); err != nil {
		return err
	}
	if err := os.Remove(c.file); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}
