package retry

import (
	"context"
	"errors"
	"net/http"
	"testing"
	"time"
)

func TestRetryAfter(t *testing.T) {
	now := time.Date(2026, 1, 2, 3, 4, 5, 0, time.UTC)
	for _, tc := range []struct {
		h    map[string]string
		want time.Duration
		ok   bool
	}{
		{nil, 0, false},
		{map[string]string{"Retry-After": "2"}, 2 * time.Second, true},
		{map[string]string{"Retry-After": "0.5"}, 500 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "150", "Retry-After": "9"}, 150 * time.Millisecond, true},
		{map[string]string{"Retry-After-Ms": "junk", "Retry-After": "9"}, 9 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(3 * time.Second).Format(http.TimeFormat)}, 3 * time.Second, true},
		{map[string]string{"Retry-After": now.Add(-time.Hour).Format(http.TimeFormat)}, 0, true},
		{map[string]string{"Retry-After": "-1"}, 0, false},
		{map[string]string{"Retry-After": "soon"}, 0, false},
	} {
		h := http.Header{}
		for k, v := range tc.h {
			h.Set(k, v)
		}
		got, ok := RetryAfter(h, now)
		if got != tc.want || ok != tc.ok {
			t.Errorf("RetryAfter(%v) = %s, %v; want %s, %v", tc.h, got, ok, tc.want, tc.ok)
		}
	}
}

func TestRetryableStatus(t *testing.T) {
	for status, want := range map[int]bool{400: false, 401: false, 404: false, 408: true, 409: false, 429: true, 500: true, 503: true, 529: true} {
		if got := RetryableStatus(status, nil); got != want {
			t.Errorf("RetryableStatus(%d) = %v", status, got)
		}
	}
	if RetryableStatus(503, http.Header{"X-Should-Retry": {"false"}}) {
		t.Error("x-should-retry: false ignored")
	}
	if !RetryableStatus(409, http.Header{"X-Should-Retry": {"true"}}) {
		t.Error("x-should-retry: true ignored")
	}
}

func TestBackoff(t *testing.T) {
	p := Policy{BaseDelay: 100 * time.Millisecond, MaxDelay: time.Second}
	for n, full := range []time.Duration{100, 200, 400, 800, 1000, 1000} {
		full *= time.Millisecond
		for range 50 {
			d := p.Backoff(n)
			if d < full/2 || d > full {
				t.Fatalf("Backoff(%d) = %s, want in [%s, %s]", n, d, full/2, full)
			}
		}
	}
	if d := p.Backoff(200); d < 500*time.Millisecond || d > time.Second {
		t.Errorf("Backoff(200) = %s (overflow?)", d)
	}
}

func TestDo(t *testing.T) {
	p := Policy{MaxRetries: 2, BaseDelay: time.Microsecond}
	calls := 0
	v, err := Do(context.Background(), p, func(context.Context) (int, error) {
		calls++
		if calls < 3 {
			return 0, &APIError{Provider: "x", StatusCode: 429, Retryable: true}
		}
		return 7, nil
	})
	if v != 7 || err != nil || calls != 3 {
		t.Fatalf("v=%d err=%v calls=%d", v, err, calls)
	}

	calls = 0
	_, err = Do(context.Background(), p, func(context.Context) (int, error) {
		calls++
		return 0, &APIError{Provider: "x", StatusCode: 503, Retryable: true, Message: "down"}
	})
	if err == nil || err.Error() != "x: API error 503 after 2 retries: down" || calls != 3 {
		t.Fatalf("err=%v calls=%d", err, calls)
	}

	calls = 0
	plain := errors.New("dial failed")
	_, err = Do(context.Background(), p, func(context.Context) (int, error) {
		calls++
		return 0, plain
	})
	if err != plain || calls != 1 {
		t.Fatalf("err=%v calls=%d: transport errors are not retried", err, calls)
	}
}

func TestAPIErrorMessages(t *testing.T) {
	for _, tc := range []struct {
		e    APIError
		want string
	}{
		{APIError{Provider: "anthropic", StatusCode: 429, Retries: 3, Message: "slow down"}, "anthropic: rate limited (429) after 3 retries: slow down"},
		{APIError{Provider: "anthropic", StatusCode: 529, Retries: 1, Message: "Overloaded"}, "anthropic: overloaded (529) after 1 retry: Overloaded"},
		{APIError{Provider: "openai", StatusCode: 400, Message: "bad"}, "openai: API error 400: bad"},
		{APIError{Provider: "openai", StatusCode: 500}, "openai: API error 500"},
	} {
		if got := tc.e.Error(); got != tc.want {
			t.Errorf("got %q, want %q", got, tc.want)
		}
	}
}

func TestBodyMessage(t *testing.T) {
	for body, want := range map[string]string{
		`{"error":{"message":"m1","type":"t"}}`: "m1",
		`{"error":"m2"}`:                        "m2",
		`{"message":"m3"}`:                      "m3",
		`{"detail":"m4"}`:                       "m4",
		`{"detail":[{"loc":["body"]}]}`:         `{"detail":[{"loc":["body"]}]}`,
		"  plain  ":                             "plain",
		"":                                      "Bad Gateway",
	} {
		if got := BodyMessage([]byte(body), 502); got != want {
			t.Errorf("BodyMessage(%q) = %q, want %q", body, got, want)
		}
	}
	if got := BodyMessage(nil, 599); got != "status 599" {
		t.Errorf("got %q", got)
	}
}

func TestRedact(t *testing.T) {
	if got := Redact("key sk-1 and sk-1", "sk-1"); got != "key [redacted] and [redacted]" {
		t.Errorf("got %q", got)
	}
	if got := Redact("nothing", ""); got != "nothing" {
		t.Errorf("got %q", got)
	}
}
