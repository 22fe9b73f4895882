package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"log/slog"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"testing/synctest"
	"time"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/store"
)

// lockedBuffer is a log destination safe for the publisher's goroutine and the test.
type lockedBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
}

// webhookRecorder is an HTTP endpoint that decodes every head posted to it and fails
// the first failFirst requests with 503.
type webhookRecorder struct {
	mu        sync.Mutex
	heads     []publishedHead
	calls     int
	failFirst int
	problems  []string
}

func (w *webhookRecorder) ServeHTTP(rw http.ResponseWriter, r *http.Request) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.calls++
	if r.Method != http.MethodPost || r.Header.Get("Content-Type") != "application/json" {
		w.problems = append(w.problems, r.Method+" "+r.Header.Get("Content-Type"))
	}
	body, _ := io.ReadAll(r.Body)
	if w.calls <= w.failFirst {
		http.Error(rw, "not now", http.StatusServiceUnavailable)
		return
	}
	var h publishedHead
	dec := json.NewDecoder(bytes.NewReader(body))
	dec.DisallowUnknownFields()
	if err := dec.Decode(&h); err != nil {
		w.problems = append(w.problems, "body "+string(body)+": "+err.Error())
	}
	w.heads = append(w.heads, h)
}

func (w *webhookRecorder) snapshot() (heads []publishedHead, calls int, problems []string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]publishedHead(nil), w.heads...), w.calls, append([]string(nil), w.problems...)
}

func openSQLite(t *testing.T) store.Store {
	t.Helper()
	st, err := store.Open(context.Background(), "sqlite://"+filepath.Join(t.TempDir(), "warden.db"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { st.Close() })
	return st
}

func readHead(t *testing.T, path string) publishedHead {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("the head file: %v", err)
	}
	if !bytes.HasSuffix(b, []byte("\n")) || bytes.Count(b, []byte("\n")) != 1 {
		t.Errorf("the head file %q is not one line", b)
	}
	var h publishedHead
	if err := json.Unmarshal(b, &h); err != nil {
		t.Fatalf("the head file %q: %v", b, err)
	}
	return h
}

// The publisher reads the head every interval and, only when it changed, logs it,
// replaces the head file and posts it to the webhook; a failed post is tried again at
// the next tick though the head did not change. Time is synctest's.
func TestHeadPublisherPeriodic(t *testing.T) {
	st := openSQLite(t)
	hook := &webhookRecorder{failFirst: 1}
	srv := httptest.NewServer(hook)
	defer srv.Close()
	dir := t.TempDir()
	path := filepath.Join(dir, "head.json")
	var logs lockedBuffer
	// The store's writer lives outside the bubble, so the calls are recorded from a
	// goroutine outside it too (a bubble's contexts must not reach the writer).
	type recorded struct {
		h   store.Head
		err error
	}
	asks, answers := make(chan struct{}), make(chan recorded)
	go func() {
		for range asks {
			err := st.RecordCall(context.Background(), store.CallRecord{Tool: "t", Status: warden.StatusRefused})
			var h store.Head
			if err == nil {
				h, err = st.AuditHead(context.Background())
			}
			answers <- recorded{h, err}
		}
	}()
	defer close(asks)
	record := func(t *testing.T) store.Head {
		t.Helper()
		asks <- struct{}{}
		r := <-answers
		if r.err != nil {
			t.Fatal(r.err)
		}
		return r.h
	}
	synctest.Test(t, func(t *testing.T) {
		cfg := &File{HeadFile: path, HeadWebhook: srv.URL + "/head?token=secret"}
		p := newHeadPublisher(st, func() *File { return cfg }, slog.New(slog.NewTextHandler(&logs, nil)))
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan struct{})
		go func() { p.run(ctx, time.Minute); close(done) }()

		// An empty log has no head to publish.
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, calls, _ := hook.snapshot(); calls != 0 || logs.String() != "" {
			t.Fatalf("an empty log: %d posts, log %q; want nothing published", calls, logs.String())
		}
		if _, err := os.Stat(path); !os.IsNotExist(err) {
			t.Fatalf("an empty log: the head file exists (%v)", err)
		}

		record(t)
		h2 := record(t)
		time.Sleep(time.Minute)
		synctest.Wait()
		if got := readHead(t, path); got.Seq != h2.Seq || got.Hash != h2.Hash || got.Time.IsZero() {
			t.Errorf("head file = %+v, want %+v", got, h2)
		}
		heads, calls, _ := hook.snapshot()
		if calls != 1 || len(heads) != 0 {
			t.Errorf("after the first tick: %d posts, %d accepted; want 1 refused", calls, len(heads))
		}
		if n := strings.Count(logs.String(), "msg=\"gateway: audit chain head\" seq=2 hash="+h2.Hash); n != 1 {
			t.Errorf("log has the head line %d times, want 1:\n%s", n, logs.String())
		}
		if !strings.Contains(logs.String(), "cannot post the audit chain head") || strings.Contains(logs.String(), "secret") {
			t.Errorf("log does not report the failed post, or shows the webhook's query:\n%s", logs.String())
		}

		// The head did not change: only the failed post is made again.
		time.Sleep(time.Minute)
		synctest.Wait()
		heads, calls, _ = hook.snapshot()
		if calls != 2 || len(heads) != 1 || heads[0].Seq != h2.Seq || heads[0].Hash != h2.Hash {
			t.Errorf("after the retry: %d posts, heads %+v; want 2 posts, the second with %+v", calls, heads, h2)
		}
		time.Sleep(time.Minute)
		synctest.Wait()
		if _, calls, _ = hook.snapshot(); calls != 2 || strings.Count(logs.String(), "audit chain head\"") != 1 {
			t.Errorf("an unchanged head was published again: %d posts, log:\n%s", calls, logs.String())
		}

		h3 := record(t)
		time.Sleep(time.Minute)
		synctest.Wait()
		heads, calls, problems := hook.snapshot()
		if calls != 3 || len(heads) != 2 || heads[1].Seq != 3 || heads[1].Hash != h3.Hash {
			t.Errorf("after a new entry: %d posts, heads %+v; want a third post with %+v", calls, heads, h3)
		}
		if got := readHead(t, path); got.Seq != 3 || got.Hash != h3.Hash {
			t.Errorf("head file = %+v, want %+v", got, h3)
		}
		if len(problems) > 0 {
			t.Errorf("webhook requests: %v", problems)
		}
		cancel()
		<-done
	})
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 1 {
		t.Errorf("the head file's directory holds %d files, want only head.json (no temporary file left)", len(entries))
	}
}

// A webhook that does not answer in time fails the post (logged) without holding the
// publisher beyond its timeout.
func TestHeadWebhookTimeout(t *testing.T) {
	st := openSQLite(t)
	if err := st.RecordCall(context.Background(), store.CallRecord{Tool: "t", Status: warden.StatusRefused}); err != nil {
		t.Fatal(err)
	}
	release := make(chan struct{})
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		select {
		case <-release:
		case <-r.Context().Done():
		}
	}))
	defer srv.Close()
	defer close(release)
	var logs lockedBuffer
	cfg := &File{HeadWebhook: srv.URL}
	p := newHeadPublisher(st, func() *File { return cfg }, slog.New(slog.NewTextHandler(&logs, nil)))
	p.client.Timeout = 50 * time.Millisecond
	start := time.Now()
	p.publish(context.Background())
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("publish took %v with a webhook that never answers", d)
	}
	if !strings.Contains(logs.String(), "cannot post the audit chain head") || p.posted.Seq != 0 {
		t.Errorf("a timed-out post was not reported as failed (posted %+v):\n%s", p.posted, logs.String())
	}
}
