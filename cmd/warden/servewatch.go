package main

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"log/slog"
	"os"

	"github.com/wardenhq/warden/gateway"
)

// configWatch notices changes to a gateway's files: the config and the files it names
// (the policy, the shadow policy, a project file). For each it keeps the SHA-256 of the content as it
// was just BEFORE the last load read it, so any difference found later is an edit
// made after (or while) that load read the file, never one it already applied:
//
//   - an edit saved while a reload is in progress makes the next check reload again
//     (the hash was taken before the reload read the file, so the edit differs from
//     it), where a stamp taken after reading would have swallowed it;
//   - contents are compared, not sizes and times, so an edit that keeps a file's size
//     and modification time (coarse file system clocks, a replace by rename) is seen.
//
// A configWatch is used by one goroutine at a time (the serve loop).
type configWatch struct {
	config    string
	stdioOnly bool              // serve --stdio: HTTP clients' and operators' token variables may be unset
	sums      map[string]string // file -> content hash taken before the last load read it
	// hook, when set (by tests), is called with "stamped" once every file of a load
	// is hashed and before the gateway reads the policy, and with "loaded" once the
	// load has been applied (or refused), before its hashes are kept.
	hook func(stage string)
}

// fileSum is the hash of a file's content, or a marker for a file that cannot be
// read (a change from unreadable to readable, or back, is a change).
func fileSum(path string) string {
	data, err := os.ReadFile(path)
	if err != nil {
		return "unreadable"
	}
	return sumOf(data)
}

func sumOf(data []byte) string {
	h := sha256.Sum256(data)
	return hex.EncodeToString(h[:])
}

// parse checks the config's contents, as the stdio front needs them when stdioOnly.
func (w *configWatch) parse(data []byte) (*gateway.File, error) {
	if w.stdioOnly {
		return gateway.ParseFileStdio(w.config, data, os.Getenv)
	}
	return gateway.ParseFile(w.config, data, os.Getenv)
}

// load reads and checks the config, hashing every file before it is read, then
// calls apply (when not nil) with it; apply reads the policy (NewGateway or
// Gateway.Reload). The hashes are kept whatever the result: a refused load is tried
// again only once a file changes again. Errors are the config's or apply's.
func (w *configWatch) load(apply func(*gateway.File) error) (*gateway.File, error) {
	sums := make(map[string]string, len(w.sums)+1)
	for f := range w.sums {
		// The files of the revision in force (policy, project file) are hashed before
		// the config is even read: the load may read them again under the same names.
		sums[f] = fileSum(f)
	}
	var cfg *gateway.File
	data, err := os.ReadFile(w.config)
	if err != nil {
		sums[w.config] = "unreadable"
		_, err = gateway.LoadFile(w.config) // the located error for the unreadable file
		if err == nil {
			// Readable again a moment later: the next check sees the change and loads it.
			err = errConfigChanged
		}
	} else {
		sums[w.config] = sumOf(data)
		cfg, err = w.parse(data)
		if err == nil && cfg.ProjectFile != "" {
			if _, ok := sums[cfg.ProjectFile]; !ok {
				// A project file not hashed before this parse read it: hash it now and
				// parse again, so what is applied was read after its hash was taken.
				sums[cfg.ProjectFile] = fileSum(cfg.ProjectFile)
				cfg, err = w.parse(data)
			}
		}
		if err == nil {
			for _, f := range []string{cfg.Policy, cfg.ShadowPolicy} {
				if _, ok := sums[f]; f != "" && !ok {
					sums[f] = fileSum(f) // before apply reads it
				}
			}
		}
	}
	if w.hook != nil {
		w.hook("stamped")
	}
	if err == nil && apply != nil {
		err = apply(cfg)
	}
	if w.hook != nil {
		w.hook("loaded")
	}
	if err == nil {
		// Watch exactly the files of the revision now in force.
		kept := map[string]string{w.config: sums[w.config], cfg.Policy: sums[cfg.Policy]}
		if cfg.ProjectFile != "" {
			kept[cfg.ProjectFile] = sums[cfg.ProjectFile]
		}
		if cfg.ShadowPolicy != "" {
			kept[cfg.ShadowPolicy] = sums[cfg.ShadowPolicy]
		}
		sums = kept
	}
	w.sums = sums
	if err != nil {
		return nil, err
	}
	return cfg, nil
}

// changed reports whether any watched file's content differs from its hash.
func (w *configWatch) changed() bool {
	for f, s := range w.sums {
		if fileSum(f) != s {
			return true
		}
	}
	return false
}

// errConfigChanged: the config could not be read, then could; it is loaded on the next
// check.
var errConfigChanged = configChangedError{}

type configChangedError struct{}

func (configChangedError) Error() string {
	return "the config file changed while it was read; it is loaded on the next check"
}

// reloadGateway loads the config again and applies it to gw, then to what else
// serves it (apply, when not nil: the inbox's operators), and returns the config it
// applied (nil when refused). The log says "configuration reloaded" only once all of
// it is in force. A refused reload leaves the previous revision in force and says why
// in the log.
func reloadGateway(ctx context.Context, gw *gateway.Gateway, w *configWatch, log *slog.Logger, why string, apply func(*gateway.File)) *gateway.File {
	next, err := w.load(func(c *gateway.File) error { return gw.Reload(ctx, c) })
	if err != nil {
		log.Error("reload refused; the previous configuration stays in force", "trigger", why, "error", err)
		return nil
	}
	if apply != nil {
		apply(next)
	}
	log.Info("configuration reloaded", "trigger", why)
	return next
}
