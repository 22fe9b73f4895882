package mcptest

import (
	"context"
	"log/slog"
	"maps"
	"testing"
)

// KeysOnce wraps h so that tb fails (Errorf) whenever a record would carry one key
// twice: an attribute of the record that repeats one given by WithAttrs (a logger
// made With("server", ...) logging "server" again), or one of the record's own
// attributes repeated. Keys inside a group count with the group's name as a prefix.
// The record is still handled, so the log shows the line.
func KeysOnce(tb testing.TB, h slog.Handler) slog.Handler {
	return &keysOnce{tb: tb, next: h}
}

type keysOnce struct {
	tb     testing.TB
	next   slog.Handler
	prefix string          // the open groups, each followed by a dot
	keys   map[string]bool // of WithAttrs, prefixed; never changed once made
}

func (k *keysOnce) Enabled(ctx context.Context, l slog.Level) bool { return k.next.Enabled(ctx, l) }

func (k *keysOnce) Handle(ctx context.Context, r slog.Record) error {
	seen := maps.Clone(k.keys)
	if seen == nil {
		seen = make(map[string]bool, r.NumAttrs())
	}
	r.Attrs(func(a slog.Attr) bool {
		k.check(seen, k.prefix, a, r.Message)
		return true
	})
	return k.next.Handle(ctx, r)
}

// check records a's key (each key of a group) in seen, failing tb on one already there.
func (k *keysOnce) check(seen map[string]bool, prefix string, a slog.Attr, msg string) {
	a.Value = a.Value.Resolve()
	if a.Value.Kind() == slog.KindGroup {
		p := prefix
		if a.Key != "" {
			p += a.Key + "."
		}
		for _, g := range a.Value.Group() {
			k.check(seen, p, g, msg)
		}
		return
	}
	key := prefix + a.Key
	if seen[key] {
		k.tb.Errorf("log line %q carries the key %q twice", msg, key)
	}
	seen[key] = true
}

func (k *keysOnce) WithAttrs(attrs []slog.Attr) slog.Handler {
	seen := maps.Clone(k.keys)
	if seen == nil {
		seen = make(map[string]bool, len(attrs))
	}
	for _, a := range attrs {
		k.check(seen, k.prefix, a, "(a logger's With)")
	}
	return &keysOnce{tb: k.tb, next: k.next.WithAttrs(attrs), prefix: k.prefix, keys: seen}
}

func (k *keysOnce) WithGroup(name string) slog.Handler {
	if name == "" {
		return k
	}
	return &keysOnce{tb: k.tb, next: k.next.WithGroup(name), prefix: k.prefix + name + ".", keys: k.keys}
}
