// Package jsonargs turns the tool arguments a model wrote into the JSON object the agent
// hands to the policy: valid objects pass byte for byte (key order kept), anything else is
// wrapped so that it cannot be mistaken for real arguments.
package jsonargs

import (
	"bytes"
	"encoding/json"
)

// InvalidKey is the single key of the object that stands in for arguments that were not
// a JSON object: {"_invalid_arguments": "<what the model wrote>"}.
const InvalidKey = "_invalid_arguments"

// Object returns raw when it is a JSON object (unchanged, so key order is kept), "{}"
// when raw is empty or blank (a call without arguments), and otherwise the object
// {"_invalid_arguments": "<raw as a string>"}, which a tool's input schema refuses with a
// readable problem (an unknown property, or missing required ones). The result is always
// a fresh copy.
func Object(raw []byte) json.RawMessage {
	trimmed := bytes.TrimSpace(raw)
	if len(trimmed) == 0 {
		return json.RawMessage(`{}`)
	}
	if trimmed[0] == '{' && json.Valid(trimmed) {
		return json.RawMessage(bytes.Clone(raw))
	}
	b, err := json.Marshal(map[string]string{InvalidKey: string(raw)})
	if err != nil { // a map of strings always marshals; stay safe regardless
		return json.RawMessage(`{"` + InvalidKey + `":""}`)
	}
	return b
}

// IsObject reports whether raw is one valid JSON object.
func IsObject(raw []byte) bool {
	trimmed := bytes.TrimSpace(raw)
	return len(trimmed) > 0 && trimmed[0] == '{' && json.Valid(trimmed)
}
