package gateway_test

import (
	"context"
	"strings"
	"testing"
	"time"
)

// Found by an attack (finding A4-3; older than the refactor, which kept it), and
// fixed: audit.redact_args applies on Reload (it is not one of the settings that need
// a restart), but the pipeline's journal was built once, in New, from the first file.
// An operator who turned redaction on and reloaded still had every executed call's
// arguments written to the audit log; only the refusals made before the pipeline
// followed the new setting.
func TestAttack4RedactArgsTurnedOnByReloadApplies(t *testing.T) {
	e := gwStart(t, gwSetup{})
	w := e.connect(t, gwWriterToken, nil)
	gwWant(t, gwCall(t, w, "mcp__fault__echo", map[string]any{"text": "before-secret"}), false, "before-secret")
	if rec := e.lastCall(t, "mcp__fault__echo", "writer-agent"); !strings.Contains(string(rec.Args), "before-secret") {
		t.Fatalf("without redaction the arguments are kept: %s", rec.Args)
	}
	c := *e.cfg
	c.RedactArgs = true
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := e.gw.Reload(ctx, &c); err != nil {
		t.Fatalf("Reload: %v", err)
	}
	gwWant(t, gwCall(t, w, "mcp__fault__echo", map[string]any{"text": "after-secret"}), false, "after-secret")
	rec := e.lastCall(t, "mcp__fault__echo", "writer-agent")
	if len(rec.Args) != 0 || rec.ArgsDigest == "" {
		t.Errorf("after a reload that turned redact_args on, the executed call's audit entry keeps its arguments %s (digest %q)", rec.Args, rec.ArgsDigest)
	}
}
