package gateway

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"time"

	"github.com/wardenhq/warden/store"
)

// The audit chain's head leaves the database so that a deleted tail or a rewritten
// chain can be told later (`warden audit verify --head-file`): every HeadInterval the
// gateway reads the head the store records and, when it changed, logs it and writes it
// to HeadFile and posts it to HeadWebhook. Publishing runs on its own goroutine and
// never holds up a call; a failure is logged and retried at the next tick.

// defaultHeadInterval is how often the head is published unless audit.head_interval
// says otherwise.
const defaultHeadInterval = time.Minute

// headWebhookTimeout bounds one POST to audit.head_webhook.
const headWebhookTimeout = 10 * time.Second

// publishedHead is the JSON of the head file and of the webhook's body: one object on
// one line. `warden audit verify --head-file` reads seq and hash.
type publishedHead struct {
	Seq  int64     `json:"seq"`
	Hash string    `json:"hash"`
	Time time.Time `json:"time"` // when the gateway read it, UTC
}

// headPublisher publishes the head; publish is safe for concurrent use (the ticker's
// goroutine and Close).
type headPublisher struct {
	src    func(context.Context) (store.Head, error)
	log    *slog.Logger
	conf   func() *File // the configuration in force: its HeadFile and HeadWebhook
	client *http.Client
	now    func() time.Time

	// seq is the seq of the head last read and logged, for the metrics (0: none yet).
	seq atomic.Int64

	mu sync.Mutex
	// The head each destination last took; a destination that failed is tried again
	// at the next tick.
	logged, written, posted store.Head
	writtenTo, postedTo     string // where written and posted went
}

func newHeadPublisher(s store.Store, conf func() *File, log *slog.Logger) *headPublisher {
	return &headPublisher{
		src: s.AuditHead, log: log, conf: conf,
		client: newWebhookClient(),
		now:    time.Now,
	}
}

// newWebhookClient returns the client of the head webhook: one POST a minute or so
// needs no connection kept open between them.
func newWebhookClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.DisableKeepAlives = true
	return &http.Client{Timeout: headWebhookTimeout, Transport: tr}
}

// run publishes every interval until ctx ends.
func (p *headPublisher) run(ctx context.Context, interval time.Duration) {
	tick := time.NewTicker(interval)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-tick.C:
			p.publish(ctx)
		}
	}
}

// publish reads the head and hands it to every destination that has not taken it yet.
func (p *headPublisher) publish(ctx context.Context) {
	p.mu.Lock()
	defer p.mu.Unlock()
	h, err := p.src(ctx)
	if err != nil {
		if ctx.Err() == nil {
			p.log.Error("gateway: cannot read the audit chain head to publish it", "err", err)
		}
		return
	}
	if h.Seq == 0 {
		return // an empty log: nothing to anchor
	}
	if h != p.logged {
		p.log.Info("gateway: audit chain head", "seq", h.Seq, "hash", h.Hash)
		p.logged = h
	}
	p.seq.Store(h.Seq)
	body, err := json.Marshal(publishedHead{Seq: h.Seq, Hash: h.Hash, Time: p.now().UTC()})
	if err != nil {
		p.log.Error("gateway: encoding the audit chain head", "err", err)
		return
	}
	body = append(body, '\n')
	cfg := p.conf()
	if cfg.HeadFile != "" && (h != p.written || cfg.HeadFile != p.writtenTo) {
		if err := writeFileAtomic(cfg.HeadFile, body); err != nil {
			p.log.Error("gateway: cannot write the audit chain head to audit.head_file; will try again", "path", cfg.HeadFile, "seq", h.Seq, "err", err)
		} else {
			p.written, p.writtenTo = h, cfg.HeadFile
		}
	}
	if cfg.HeadWebhook != "" && (h != p.posted || cfg.HeadWebhook != p.postedTo) {
		if err := p.post(ctx, cfg.HeadWebhook, body); err != nil {
			p.log.Error("gateway: cannot post the audit chain head to audit.head_webhook; will try again", "url", redactedURL(cfg.HeadWebhook), "seq", h.Seq, "err", err)
		} else {
			p.posted, p.postedTo = h, cfg.HeadWebhook
		}
	}
}

func (p *headPublisher) post(ctx context.Context, target string, body []byte) error {
	ctx, cancel := context.WithTimeout(ctx, headWebhookTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, target, bytes.NewReader(body))
	if err != nil {
		return err
	}
	req.Header.Set("Content-Type", "application/json")
	resp, err := p.client.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	_, _ = io.Copy(io.Discard, io.LimitReader(resp.Body, 64<<10))
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return fmt.Errorf("the webhook answered %s, want a 2xx status", resp.Status)
	}
	return nil
}

// writeFileAtomic replaces path with data: a temporary file in the same directory is
// written, synced and renamed over path, and the directory synced, so a reader sees
// the old content or the new, never a part, and the new survives a crash.
func writeFileAtomic(path string, data []byte) (err error) {
	dir := filepath.Dir(path)
	tmp, err := os.CreateTemp(dir, "."+filepath.Base(path)+".*.tmp")
	if err != nil {
		return err
	}
	defer func() {
		if err != nil {
			tmp.Close()
			os.Remove(tmp.Name())
		}
	}()
	if _, err = tmp.Write(data); err != nil {
		return err
	}
	if err = tmp.Chmod(0o644); err != nil {
		return err
	}
	if err = tmp.Sync(); err != nil {
		return err
	}
	if err = tmp.Close(); err != nil {
		return err
	}
	if err = os.Rename(tmp.Name(), path); err != nil {
		return err
	}
	d, err := os.Open(dir)
	if err != nil {
		return err
	}
	defer d.Close()
	return d.Sync()
}

// redactedURL is u without what may be a credential (user info, query, fragment), for
// the log.
func redactedURL(u string) string {
	pu, err := url.Parse(u)
	if err != nil {
		return "(unparsable URL)"
	}
	pu.User, pu.RawQuery, pu.Fragment = nil, "", ""
	return pu.String()
}
