// Package retry is the retry loop and the API error type shared by the model providers:
// bounded exponential backoff with jitter that honours the server's Retry-After, and an
// error that names the provider, the status, the number of retries and the API's message.
package retry

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Defaults for a [Policy] field left zero.
const (
	DefaultBaseDelay = 500 * time.Millisecond
	DefaultMaxDelay  = 30 * time.Second
	// DefaultMaxRetryAfter is the longest server-requested wait that is honoured; a
	// longer Retry-After ends the call at once instead of blocking the run.
	DefaultMaxRetryAfter = 60 * time.Second
)

// Policy bounds the retries of one call.
type Policy struct {
	// MaxRetries is the number of retries after the first attempt (0: one attempt).
	MaxRetries int
	// BaseDelay is the first backoff; each retry doubles it, up to MaxDelay. The wait is
	// drawn from [d/2, d] (jitter).
	BaseDelay time.Duration
	MaxDelay  time.Duration
	// MaxRetryAfter caps a wait the server asks for; a longer one is not waited for.
	MaxRetryAfter time.Duration
}

func (p Policy) withDefaults() Policy {
	if p.MaxRetries < 0 {
		p.MaxRetries = 0
	}
	if p.BaseDelay <= 0 {
		p.BaseDelay = DefaultBaseDelay
	}
	if p.MaxDelay <= 0 {
		p.MaxDelay = DefaultMaxDelay
	}
	if p.MaxDelay < p.BaseDelay {
		p.MaxDelay = p.BaseDelay
	}
	if p.MaxRetryAfter <= 0 {
		p.MaxRetryAfter = DefaultMaxRetryAfter
	}
	return p
}

// Backoff is the wait before retry number n (0-based) when the server did not say how
// long to wait: BaseDelay·2ⁿ capped at MaxDelay, less a random part of up to half.
func (p Policy) Backoff(n int) time.Duration {
	p = p.withDefaults()
	d := p.MaxDelay
	if n < 62 {
		if b := p.BaseDelay << n; b > 0 && b < d && b>>n == p.BaseDelay {
			d = b
		}
	}
	half := d / 2
	return d - half + rand.N(half+1)
}

// Do runs attempt until it returns no error, or an error that is not an [*APIError] with
// a retryable status, or MaxRetries retries have been made, or ctx ends. An *APIError it
// returns carries the number of retries made. A ctx that ends while waiting yields an
// error that wraps ctx.Err() and names the last API error.
func Do[T any](ctx context.Context, p Policy, attempt func(context.Context) (T, error)) (T, error) {
	p = p.withDefaults()
	for n := 0; ; n++ {
		v, err := attempt(ctx)
		if err == nil {
			return v, nil
		}
		var apiErr *APIError
		if !errors.As(err, &apiErr) {
			return v, err
		}
		apiErr.Retries = n
		if !apiErr.Retryable || n >= p.MaxRetries {
			return v, err
		}
		wait := p.Backoff(n)
		if apiErr.HasRetryAfter {
			if apiErr.RetryAfter > p.MaxRetryAfter {
				apiErr.note = fmt.Sprintf("the API asked to wait %s, longer than %s", apiErr.RetryAfter.Round(time.Millisecond), p.MaxRetryAfter)
				return v, err
			}
			wait = apiErr.RetryAfter
		}
		if dl, ok := ctx.Deadline(); ok && time.Until(dl) < wait {
			apiErr.note = fmt.Sprintf("the context deadline comes before the next retry, due in %s", wait.Round(time.Millisecond))
			return v, err
		}
		if err := sleep(ctx, wait); err != nil {
			var zero T
			return zero, fmt.Errorf("%w while waiting to retry; last answer: %s", err, apiErr.describe())
		}
	}
}

func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// RetryAfter reads how long the server asks to wait: the retry-after-ms header
// (milliseconds), else retry-after (seconds, or an HTTP date). ok is false when neither
// is present and valid.
func RetryAfter(h http.Header, now time.Time) (d time.Duration, ok bool) {
	if h == nil {
		return 0, false
	}
	if v := strings.TrimSpace(h.Get("Retry-After-Ms")); v != "" {
		if ms, err := strconv.ParseFloat(v, 64); err == nil && ms >= 0 && ms < 1e12 {
			return time.Duration(ms * float64(time.Millisecond)), true
		}
	}
	if v := strings.TrimSpace(h.Get("Retry-After")); v != "" {
		if s, err := strconv.ParseFloat(v, 64); err == nil && s >= 0 && s < 1e9 {
			return time.Duration(s * float64(time.Second)), true
		}
		if t, err := http.ParseTime(v); err == nil {
			return max(0, t.Sub(now)), true
		}
	}
	return 0, false
}

// RetryableStatus reports whether an HTTP status is worth retrying: 408, 429 and every
// 5xx (529 is Anthropic's "overloaded"). An explicit x-should-retry header ("true" or
// "false") overrides the status.
func RetryableStatus(status int, h http.Header) bool {
	if h != nil {
		switch strings.ToLower(strings.TrimSpace(h.Get("X-Should-Retry"))) {
		case "true":
			return true
		case "false":
			return false
		}
	}
	return status == http.StatusRequestTimeout || status == http.StatusTooManyRequests || status >= 500
}

// APIError is an HTTP error answer of a model API, after retries. It never contains the
// API key: the message is the API's own, with any occurrence of the key removed.
type APIError struct {
	// Provider is "anthropic" or "openai".
	Provider string
	// StatusCode is the HTTP status of the last attempt.
	StatusCode int
	// Type is the API's error type ("rate_limit_error", "invalid_request_error", ...),
	// when it sent one.
	Type string
	// Message is the API's error message (or the body, or the status text, when the
	// body carried none).
	Message string
	// RequestID is the API's request id, when it sent one.
	RequestID string
	// Retries is how many retries were made before giving up (0: the first answer).
	Retries int
	// Retryable reports whether the status was worth retrying.
	Retryable bool
	// RetryAfter is the wait the server asked for (HasRetryAfter says whether it did).
	RetryAfter    time.Duration
	HasRetryAfter bool
	// Err is the SDK's error.
	Err error

	note string // why Do stopped retrying early, if it did
}

// Error renders "<provider>: rate limited (429) after 3 retries: <message>",
// "<provider>: overloaded (529) ...", or "<provider>: API error 400: <message>".
func (e *APIError) Error() string {
	return e.Provider + ": " + e.describe()
}

// describe is the error without the provider's name.
func (e *APIError) describe() string {
	var b strings.Builder
	switch e.StatusCode {
	case http.StatusTooManyRequests:
		b.WriteString("rate limited (429)")
	case 529:
		b.WriteString("overloaded (529)")
	default:
		fmt.Fprintf(&b, "API error %d", e.StatusCode)
	}
	switch {
	case e.Retries == 1:
		b.WriteString(" after 1 retry")
	case e.Retries > 1:
		fmt.Fprintf(&b, " after %d retries", e.Retries)
	}
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	if e.note != "" {
		b.WriteString(" (")
		b.WriteString(e.note)
		b.WriteString(")")
	}
	return b.String()
}

// Unwrap returns the SDK's error.
func (e *APIError) Unwrap() error { return e.Err }

// Redact removes every occurrence of secret from s.
func Redact(s, secret string) string {
	if secret == "" {
		return s
	}
	return strings.ReplaceAll(s, secret, "[redacted]")
}

// BodyMessage is a short message for an error body that the SDK found no message in: the
// "message" of a JSON body's "error" object, "error" string, top-level "message" or
// "detail" (forms OpenAI-compatible servers use), else the body's text (at most 300
// bytes), else the status text.
func BodyMessage(body []byte, status int) string {
	var v struct {
		Error   json.RawMessage `json:"error"`
		Message string          `json:"message"`
		Detail  json.RawMessage `json:"detail"`
	}
	if json.Unmarshal(body, &v) == nil {
		var nested struct {
			Message string `json:"message"`
		}
		var s string
		switch {
		case json.Unmarshal(v.Error, &nested) == nil && nested.Message != "":
			return nested.Message
		case json.Unmarshal(v.Error, &s) == nil && s != "":
			return s
		case v.Message != "":
			return v.Message
		case json.Unmarshal(v.Detail, &s) == nil && s != "":
			return s
		}
	}
	text := strings.TrimSpace(string(body))
	if text == "" {
		if text = http.StatusText(status); text == "" {
			text = "status " + strconv.Itoa(status)
		}
		return text
	}
	const limit = 300
	if len(text) > limit {
		text = strings.ToValidUTF8(text[:limit], "") + "..."
	}
	return text
}

// DefaultMaxRetries is the number of retries a provider makes when its options leave
// MaxRetries zero.
const DefaultMaxRetries = 3

// FromOptions is the policy for a provider's MaxRetries and RetryBaseDelay options:
// MaxRetries 0 means DefaultMaxRetries and a negative value no retries; a RetryBaseDelay
// of zero or less means DefaultBaseDelay.
func FromOptions(maxRetries int, baseDelay time.Duration) Policy {
	switch {
	case maxRetries == 0:
		maxRetries = DefaultMaxRetries
	case maxRetries < 0:
		maxRetries = 0
	}
	if baseDelay <= 0 {
		baseDelay = DefaultBaseDelay
	}
	return Policy{MaxRetries: maxRetries, BaseDelay: baseDelay}
}

// Call runs attempt under [Do] and shapes its error for a provider's Complete: an
// [*APIError] is returned as it is (it names the provider already), any other error is
// prefixed with "<provider>: ".
func Call[T any](ctx context.Context, p Policy, provider string, attempt func(context.Context) (T, error)) (T, error) {
	v, err := Do(ctx, p, attempt)
	if err != nil {
		var apiErr *APIError
		if errors.As(err, &apiErr) && err == error(apiErr) {
			return v, err
		}
		return v, fmt.Errorf("%s: %w", provider, err)
	}
	return v, nil
}

// NewAPIError starts the APIError for err, an error answer of provider's API: the status
// of res and its request id, read from the header named requestIDHeader, when res is
// not nil. The provider then fills in what its SDK's error says and calls [APIError.Finish].
func NewAPIError(provider string, err error, res *http.Response, requestIDHeader string) *APIError {
	e := &APIError{Provider: provider, Err: err}
	if res != nil {
		e.StatusCode = res.StatusCode
		e.RequestID = res.Header.Get(requestIDHeader)
	}
	return e
}

// Finish completes e from the headers of res (whether to retry, how long the API asks to
// wait) and, when e has no message yet, from the error body that body returns; then
// removes secret from the message.
func (e *APIError) Finish(res *http.Response, body func() []byte, secret string) *APIError {
	var h http.Header
	if res != nil {
		h = res.Header
	}
	e.Retryable = RetryableStatus(e.StatusCode, h)
	e.RetryAfter, e.HasRetryAfter = RetryAfter(h, time.Now())
	if e.Message == "" {
		e.Message = BodyMessage(body(), e.StatusCode)
	}
	e.Message = Redact(e.Message, secret)
	return e
}

// ResponseBody reads the body the SDK put back into res (at most 64 KiB) and puts what it
// read back again. It returns nil when res or its body is nil.
func ResponseBody(res *http.Response) []byte {
	if res == nil || res.Body == nil {
		return nil
	}
	body, _ := io.ReadAll(io.LimitReader(res.Body, 64<<10))
	res.Body = io.NopCloser(bytes.NewReader(body))
	return body
}

// SDKError returns the *APIError for err, the error of a call whose response (as the SDK
// captured it) is res, or err itself when err is no error answer of the API (transport,
// context, decoding of a successful answer). It is an error answer when err is the SDK's
// error type E, or res has an error status; the status decides even when the SDK could
// not decode the body. For a nil res, the response E carries (response reads it) is
// used. fill completes the APIError from the E found and may return the error body (nil:
// the body is read from the response); secret is removed from the message.
func SDKError[E error](provider, requestIDHeader, secret string, err error, res *http.Response,
	response func(E) *http.Response, fill func(*APIError, E) (body func() []byte)) error {
	var sdkErr E
	isSDK := errors.As(err, &sdkErr)
	if isSDK && res == nil {
		res = response(sdkErr)
	}
	if !isSDK && (res == nil || res.StatusCode < 400) {
		return err
	}
	e := NewAPIError(provider, err, res, requestIDHeader)
	var body func() []byte
	if isSDK {
		body = fill(e, sdkErr)
	}
	if body == nil {
		body = func() []byte { return ResponseBody(res) }
	}
	return e.Finish(res, body, secret)
}
