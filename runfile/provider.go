package runfile

// This file builds the model provider the file names.

import (
	"fmt"

	"github.com/wardenhq/warden/agent"
	"github.com/wardenhq/warden/provider/anthropic"
	"github.com/wardenhq/warden/provider/openai"
	"github.com/wardenhq/warden/provider/scripted"
)

// New returns the model provider p names. A missing API key is the provider's own
// error. A scripted provider picks the reply for a request by the number of model
// turns in the conversation, so a run resumed in another process goes on where it
// stopped.
func (p Provider) New() (agent.Provider, error) {
	switch p.Name {
	case "anthropic":
		return anthropic.New(p.Model, &anthropic.Options{BaseURL: p.BaseURL, MaxTokens: p.MaxTokens})
	case "openai":
		return openai.New(p.Model, &openai.Options{BaseURL: p.BaseURL, MaxTokens: p.MaxTokens})
	case "scripted":
		replies := p.Replies
		// The reply for a request is picked by the number of model turns in the
		// conversation, so a run resumed in another process goes on where it stopped.
		return scripted.Func(func(req agent.ModelRequest) (agent.ModelResponse, error) {
			turn := 0
			for _, m := range req.Messages {
				if m.Role == agent.RoleAssistant {
					turn++
				}
			}
			if turn >= len(replies) {
				return agent.ModelResponse{}, fmt.Errorf("%w (%d scripted in the agent configuration, turn %d)", scripted.ErrNoReply, len(replies), turn+1)
			}
			return replies[turn], nil
		}), nil
	}
	return nil, fmt.Errorf("unknown provider %q", p.Name)
}
