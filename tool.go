package warden

import "encoding/json"

// Tool describes a tool that a model may call.
type Tool struct {
	// Name is the registered name; it is what rules, audit and events use.
	Name string `json:"name"`
	// Description is shown to the model.
	Description string `json:"description,omitempty"`
	// InputSchema is the JSON Schema of the arguments (an object schema). Nil means
	// the empty object schema.
	InputSchema json.RawMessage `json:"input_schema,omitempty"`
	// Capabilities are what the tool declares it touches, in order. Warden asks a
	// checker about each one that the checker governs; it never infers them.
	Capabilities []Capability `json:"capabilities,omitempty"`
	// Source says where the tool came from: "local", "mcp:<server>", ...
	Source string `json:"source,omitempty"`
}
