// Package common holds the checks of Options that the model providers share: the model
// name, the API key (given or read from the environment) and the token limit. Each
// error starts with the provider's name.
package common

import (
	"errors"
	"fmt"
	"os"
	"strings"
)

// CheckModel fails when model is blank; example is a model name the error suggests.
func CheckModel(provider, model, example string) error {
	if strings.TrimSpace(model) == "" {
		return errors.New(provider + ": the model is required (a model name such as \"" + example + "\")")
	}
	return nil
}

// APIKey returns key, or when it is empty the value of the environment variable env.
func APIKey(key, env string) string {
	if key == "" {
		key = os.Getenv(env)
	}
	return key
}

// NoAPIKey is the error for a missing key: it names the environment variable env; hint,
// when not empty, follows in parentheses.
func NoAPIKey(provider, env, hint string) error {
	if hint != "" {
		return fmt.Errorf("%s: no API key: set %s or Options.APIKey (%s)", provider, env, hint)
	}
	return fmt.Errorf("%s: no API key: set %s or Options.APIKey", provider, env)
}

// CheckMaxTokens fails when maxTokens is negative.
func CheckMaxTokens(provider string, maxTokens int) error {
	if maxTokens < 0 {
		return fmt.Errorf("%s: Options.MaxTokens is negative (%d)", provider, maxTokens)
	}
	return nil
}
