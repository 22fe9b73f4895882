package agent

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"reflect"
	"slices"
	"strings"
	"time"

	"github.com/wardenhq/warden"
)

// Skill is one entry of a skill catalogue: instructions the model can activate with the
// read_skill tool. Body computes the instructions; it is called only when the Guard
// lets the activation run, so a refused skill's body is never computed.
type Skill struct {
	// ID names the skill; it is what the model passes as read_skill's "id" and what a
	// policy's skill rules list (target "skill:<id>").
	ID string
	// Description is the menu line the model reads for the skill.
	Description string
	// Body returns the skill's instructions. Required.
	Body func(ctx context.Context) (string, error)
}

// NoSkillsText is read_skill's description when it is offered and no skill is visible
// this iteration (REFERENCE section 4: "No skills left").
const NoSkillsText = "Activate a skill for the next iteration. No skills are available to you — answer without one, or say what you are unable to do."

// ReadSkillDescription is read_skill's registered description, and the first line of
// its menu. It names no skill: the agent builds the menu per iteration.
const ReadSkillDescription = "Activate a skill for the next iteration."

// readSkillMenuLead introduces the visible skills in the menu.
const readSkillMenuLead = ReadSkillDescription + " Call this tool with a skill's id to read its instructions. Skills available to you:"

// defaultSkillCheckTimeout bounds each menu check by a checker that is not synchronous.
const defaultSkillCheckTimeout = 5 * time.Second

// ReadSkillSchema returns read_skill's input schema for a catalogue:
//
//	{"type":"object","properties":{"id":{"type":"string","enum":[<every id>]}},"required":["id"],"additionalProperties":false}
//
// The enum is the whole catalogue, hidden skills included, so that activating a hidden
// skill reaches the policy and the model reads the policy's own refusal rather than a
// schema error. The schema names hidden skills only as enum values, never with a
// description.
func ReadSkillSchema(skills []Skill) json.RawMessage {
	type idProp struct {
		Type string   `json:"type"`
		Enum []string `json:"enum"`
	}
	type props struct {
		ID idProp `json:"id"`
	}
	type schema struct {
		Type                 string   `json:"type"`
		Properties           props    `json:"properties"`
		Required             []string `json:"required"`
		AdditionalProperties bool     `json:"additionalProperties"`
	}
	ids := make([]string, 0, len(skills))
	for _, s := range skills {
		ids = append(ids, s.ID)
	}
	b, err := json.Marshal(schema{Type: "object", Properties: props{ID: idProp{Type: "string", Enum: ids}}, Required: []string{"id"}})
	if err != nil { // strings only: cannot happen
		panic("agent: read_skill schema: " + err.Error())
	}
	return b
}

// ReadSkillTool returns the read_skill tool for a catalogue, to register with the
// Registry before Bind (the agent does not register tools itself). Its Run returns the
// body of the skill named by the "id" argument. The Guard's skill gate (when a checker
// governs [warden.CapSkillRead]) judges the id before Run, so a refused skill's Body is
// never called. The catalogue is copied; give [Options.Skills] the same catalogue.
func ReadSkillTool(skills []Skill) warden.Executable {
	cat := make(map[string]Skill, len(skills))
	for _, s := range skills {
		if _, dup := cat[s.ID]; !dup {
			cat[s.ID] = s
		}
	}
	return warden.Executable{
		Tool: warden.Tool{
			Name:        warden.ReadSkillTool,
			Description: ReadSkillDescription,
			InputSchema: ReadSkillSchema(skills),
			Source:      "agent",
		},
		Run: func(ctx context.Context, args warden.Args, _ *warden.Credential) (any, error) {
			id, _ := args.String("id")
			s, ok := cat[id]
			if !ok {
				return nil, fmt.Errorf("unknown skill %q", id)
			}
			if s.Body == nil {
				return nil, fmt.Errorf("skill %q has no body", id)
			}
			return s.Body(ctx)
		},
	}
}

// checkSkills rejects a catalogue with an empty or duplicate id or a missing body.
func checkSkills(skills []Skill) error {
	seen := map[string]bool{}
	for i, s := range skills {
		if strings.TrimSpace(s.ID) == "" {
			return fmt.Errorf("agent: skill %d has no id", i)
		}
		if seen[s.ID] {
			return fmt.Errorf("agent: skill %q is listed twice", s.ID)
		}
		seen[s.ID] = true
		if s.Body == nil {
			return fmt.Errorf("agent: skill %q has no Body", s.ID)
		}
	}
	return nil
}

// skillMenu returns read_skill's description for this iteration, listing the skills
// that may be listed (see skillVisible), and false when there is none. Hidden skills
// are named nowhere in it.
func (a *Agent) skillMenu(ctx context.Context, st *run) (string, bool) {
	var b strings.Builder
	n := 0
	v := warden.Viewer{Identity: st.identity, Iteration: st.iteration, Sequence: st.sequence}
	for _, s := range a.skills {
		if slices.Contains(st.unauthorized, warden.SkillTarget(s.ID)) {
			continue // its authorization faulted earlier in the run: not asked again
		}
		if !a.skillVisible(ctx, s.ID, v) {
			continue
		}
		if n == 0 {
			b.WriteString(readSkillMenuLead)
		}
		n++
		b.WriteString("\n- ")
		b.WriteString(s.ID)
		if s.Description != "" {
			b.WriteString(": ")
			b.WriteString(s.Description)
		}
	}
	return b.String(), n > 0
}

// skillVisible reports whether one skill is listed: Options.SkillChecker's answer when it
// is set, else the Guard's own skill gate's. Only an allow shows it: a refusal, an ask,
// an error, a panic, an invalid effect or no answer in time hides it.
func (a *Agent) skillVisible(ctx context.Context, id string, v warden.Viewer) bool {
	if c := a.cfg.SkillChecker; c != nil {
		return warden.SkillOffered(ctx, c, id, v, a.cfg.SkillCheckTimeout)
	}
	return a.guard.OffersSkill(ctx, id, v)
}

// sameJSON reports whether two JSON documents have the same meaning.
func sameJSON(a, b []byte) bool {
	var x, y any
	if errors.Join(json.Unmarshal(a, &x), json.Unmarshal(b, &y)) != nil {
		return false
	}
	return reflect.DeepEqual(x, y)
}
