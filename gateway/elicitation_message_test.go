package gateway_test

import (
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/gateway"
	"github.com/wardenhq/warden/internal/display"
)

// The elicitation text a client shows its user escapes every control, bidi and
// invisible character, carries the full digest, and never cuts an argument.
func TestElicitationMessageShowsWhatRuns(t *testing.T) {
	long := strings.Repeat("x", 100_000) + "; rm -rf /"
	args, err := warden.ParseArgs([]byte("{\"cmd\":\"rm -rf \u202e/ #yrotcerid-pmt/.\",\"ansi\":\"\\u001b[31m\",\"zw\":\"a\u200db\",\"long\":\"" + long + "\"}"))
	if err != nil {
		t.Fatal(err)
	}
	p := &warden.PendingDecision{Question: "Clean \u202eup\x1b[8m?", Detail: "one\ntwo\rthree", Tool: "sh\u2066ell", Args: args, Digest: args.Digest()}
	msg := gateway.ElicitationMessage(p)
	for i, r := range msg {
		if r != '\n' && display.Unsafe(r) {
			t.Fatalf("the message holds %U as itself near %q", r, msg[max(0, i-30):i])
		}
	}
	for _, want := range []string{
		"Clean \\u202eup\\u001b[8m?\n\none\ntwo\\u000dthree\n\nTool: sh\\u2066ell\nArguments:\n{\n",
		`  "cmd": "rm -rf \u202e/ #yrotcerid-pmt/.",`,
		`  "ansi": "\u001b[31m",`,
		`  "zw": "a\u200db",`,
		`  "long": "` + long + `"`,
		"\n}\nArguments digest: " + args.Digest() + "\n\nAccept to run exactly this call; decline to refuse it.",
	} {
		if !strings.Contains(msg, want) {
			t.Errorf("the message lacks %.120q", want)
		}
	}
	if !strings.HasPrefix(args.Digest(), "sha256:") || len(args.Digest()) != len("sha256:")+64 {
		t.Errorf("digest %q is not a full SHA-256", args.Digest())
	}
	// Plain ASCII passes unchanged.
	plain, _ := warden.ParseArgs([]byte(`{"name":"drop"}`))
	got := gateway.ElicitationMessage(&warden.PendingDecision{Question: "Delete note?", Tool: "delete_note", Args: plain})
	if want := "Delete note?\n\nTool: delete_note\nArguments:\n{\n  \"name\": \"drop\"\n}\n\nAccept to run exactly this call; decline to refuse it."; got != want {
		t.Errorf("plain message:\n%s\nwant\n%s", got, want)
	}
}
