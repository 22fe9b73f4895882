package inbox_test

// What is shown is what runs: every page where an operator reads a call shows the
// characters that would not show as themselves (controls, direction overrides,
// invisible characters) as marked escapes, the full digest, and every character of a
// long argument.

import (
	"context"
	"encoding/json"
	"fmt"
	"html"
	"net/http"
	"net/url"
	"regexp"
	"strings"
	"testing"

	"github.com/wardenhq/warden"
	"github.com/wardenhq/warden/internal/display"
	"github.com/wardenhq/warden/store"
)

// hostileArgs hold every kind of lying character, raw in the JSON text (as a client
// can send them) and as JSON escapes.
const hostileArgs = "{\"cmd\":\"rm -rf \u202e/ #yrotcerid-pmt/.\"," +
	"\"isolate\":\"a\u2066b\u2069\"," +
	"\"zw\":\"r\u200bm\u200d\ufeff\"," +
	"\"ansi\":\"\\u001b[2J\\u001b[31mred\"," +
	"\"lines\":\"echo ok\\r\\nrm -rf /\"," +
	"\"nul\":\"a\\u0000b\"," +
	"\"tag\":\"x\U000e0041\"}"

// assertNoHiddenCharacters fails when the page holds a character that a person
// cannot see as itself (a line feed between tags is markup, not content).
func assertNoHiddenCharacters(t *testing.T, where, body string) {
	t.Helper()
	for i, r := range body {
		if r != '\n' && display.Unsafe(r) {
			lo := max(0, i-60)
			t.Errorf("%s: %U shown as itself near %q", where, r, body[lo:min(len(body), i+20)])
			return
		}
	}
}

func escMark(code, name string) string {
	return `<span class="esc" title="U&#43;` + code + ` ` + name + `">\u` + strings.ToLower(code) + `</span>`
}

func TestPendingShowsHiddenCharactersEscaped(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c, _ := f.signedIn()
	p := createPending(t, f.st, pendingSpec{
		question: "Run \u202eetadpu\u202c the\x1b[8m hidden\x1b[0m cleanup?",
		tool:     "sh\u200bell",
		session:  "s-\u2067x",
		args:     hostileArgs,
		evidence: &warden.Evidence{Does: "runs\u202e cleanup", Context: []string{"ok\rEVIL"}},
	})
	ctx := context.Background()
	args, err := warden.ParseArgs([]byte(hostileArgs))
	if err != nil {
		t.Fatal(err)
	}
	raw, _ := args.MarshalJSON()
	if err := f.st.RecordCall(ctx, store.CallRecord{CallID: "c-bidi", Tool: "sh\u200bell", Args: raw, ArgsDigest: args.Digest(),
		RuleID: "r\u202e1", Rationale: "because\u202e", Identity: warden.Identity{Principal: "agent\u200d"}, Status: warden.StatusRan}); err != nil {
		t.Fatal(err)
	}
	recs, err := f.st.QueryCalls(ctx, store.CallFilter{CallID: "c-bidi"})
	if err != nil || len(recs) != 1 {
		t.Fatalf("QueryCalls: %v %d", err, len(recs))
	}
	pages := []string{"/ui/pending", "/ui/pending/list", "/ui/pending/" + p.ID, "/ui/audit",
		fmt.Sprintf("/ui/audit/%d", recs[0].Seq), "/ui/audit/call/c-bidi"}
	for _, path := range pages {
		resp, body := f.get(c, path)
		if resp.StatusCode != http.StatusOK {
			t.Errorf("%s: status %d", path, resp.StatusCode)
			continue
		}
		assertNoHiddenCharacters(t, path, body)
		if !strings.Contains(body, escMark("200B", "ZERO WIDTH SPACE")) {
			t.Errorf("%s: the zero-width space in the tool name is not marked", path)
		}
	}
	for _, path := range []string{"/ui/pending", "/ui/pending/" + p.ID, fmt.Sprintf("/ui/audit/%d", recs[0].Seq)} {
		_, body := f.get(c, path)
		for _, want := range []string{
			// The argument that runs, as it runs: the override is marked where it sits.
			`&#34;rm -rf ` + escMark("202E", "RIGHT-TO-LEFT OVERRIDE") + `/ #yrotcerid-pmt/.&#34;`,
			`&#34;a` + escMark("2066", "LEFT-TO-RIGHT ISOLATE") + `b` + escMark("2069", "POP DIRECTIONAL ISOLATE") + `&#34;`,
			`r` + escMark("200B", "ZERO WIDTH SPACE") + `m` + escMark("200D", "ZERO WIDTH JOINER") + escMark("FEFF", "ZERO WIDTH NO-BREAK SPACE"),
			escMark("001B", "ESCAPE") + `[2J`,
			`&#34;echo ok<span class="esc" title="U&#43;000D CARRIAGE RETURN">\r</span><span class="esc" title="U&#43;000A LINE FEED">\n</span>rm -rf /&#34;`,
			`&#34;a` + escMark("0000", "NULL") + `b&#34;`,
			`x<span class="esc" title="U&#43;E0041 TAG CHARACTER">\udb40\udc41</span>`,
			// The full digest of the arguments, never shortened.
			args.Digest(),
		} {
			if !strings.Contains(body, want) {
				t.Errorf("%s lacks %s", path, want)
			}
		}
	}
	_, body := f.get(c, "/ui/pending")
	for _, want := range []string{
		`Run ` + escMark("202E", "RIGHT-TO-LEFT OVERRIDE") + `etadpu` + escMark("202C", "POP DIRECTIONAL FORMATTING") +
			` the` + escMark("001B", "ESCAPE") + `[8m hidden`,
		`runs` + escMark("202E", "RIGHT-TO-LEFT OVERRIDE") + ` cleanup`,
		`ok<span class="esc" title="U&#43;000D CARRIAGE RETURN">\u000d</span>EVIL`,
		`s-` + escMark("2067", "RIGHT-TO-LEFT ISOLATE") + `x`,
	} {
		if !strings.Contains(body, want) {
			t.Errorf("pending page lacks %s", want)
		}
	}
}

// The 100 kB argument whose dangerous part is at its end: the list shows the end and
// a marker for what it leaves out, and cannot approve it; the call's own page shows
// every character, and decides.
func TestLongArgumentNeverHidden(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c, csrf := f.signedIn()
	long := "echo " + strings.Repeat("harmless-", 100_000/9) + "; rm -rf / --no-preserve-root"
	spec, _ := json.Marshal(map[string]string{"cmd": long})
	p := createPending(t, f.st, pendingSpec{tool: "bash", args: string(spec)})
	short := createPending(t, f.st, pendingSpec{tool: "fs_read"})

	_, body := f.get(c, "/ui/pending")
	card := cardOf(t, body, p.ID)
	if !strings.Contains(card, "rm -rf / --no-preserve-root&#34;") {
		t.Errorf("the list hides the end of the long argument: %s", card[max(0, len(card)-3000):])
	}
	m := regexp.MustCompile(`\[… ([0-9,]+) more characters not shown here`).FindStringSubmatch(card)
	if m == nil {
		t.Fatal("the list cuts the long argument without a marker")
	}
	if strings.Contains(card, `value="approve-once"`) {
		t.Error("a call whose arguments are cut can be approved from the list")
	}
	if !strings.Contains(card, `href="/ui/pending/`+p.ID+`"`) {
		t.Error("the cut card has no link to the whole call")
	}
	if c2 := cardOf(t, body, short.ID); !strings.Contains(c2, `value="approve-once"`) || strings.Contains(c2, "more characters not shown") {
		t.Error("a short call is cut or cannot be approved from the list")
	}
	// Head + tail + the number the marker gives add up to the whole argument list.
	omitted, _ := stringsToInt(strings.ReplaceAll(m[1], ",", ""))
	pretty, _ := display.JSON(spec)
	pre := preOf(t, card)
	shownChars := len([]rune(html.UnescapeString(regexp.MustCompile(`<span class="cut"[^>]*>.*?</span>`).ReplaceAllString(pre, ""))))
	if shownChars+omitted != pretty.Len() {
		t.Errorf("shown %d + omitted %d characters, want %d", shownChars, omitted, pretty.Len())
	}

	_, whole := f.get(c, "/ui/pending/"+p.ID)
	if got := html.UnescapeString(preOf(t, whole)); got != pretty.String() {
		t.Errorf("the call's page does not show the whole argument list (%d of %d characters)", len(got), len(pretty.String()))
	}
	if strings.Contains(whole, "more characters not shown") {
		t.Error("the call's page cuts the argument")
	}
	resp, _ := f.post(c, "/ui/pending/"+p.ID+"/decide", url.Values{"csrf": {csrf}, "verdict": {"decline"}})
	if resp.StatusCode != http.StatusSeeOther {
		t.Fatalf("decide from the call's page: status %d", resp.StatusCode)
	}
	if got := getPending(t, f.st, p.ID); got.State != store.StateDeclined {
		t.Errorf("state %q after declining, want declined", got.State)
	}
	_, whole = f.get(c, "/ui/pending/"+p.ID)
	if strings.Contains(whole, `value="approve-once"`) || !strings.Contains(whole, "no longer pending (declined)") {
		t.Error("a decided call's page still offers the decision")
	}
	if resp, _ := f.get(c, "/ui/pending/apv_nosuchid"); resp.StatusCode != http.StatusNotFound {
		t.Errorf("unknown call: status %d, want 404", resp.StatusCode)
	}
}

func TestPlainArgumentsShownUnchanged(t *testing.T) {
	f := newFixture(t, fixtureOptions{})
	c, _ := f.signedIn()
	const ascii = `{"cmd":"ls -la ./src | grep -v '~' && echo \"done\" 2>&1 > /dev/null; x=$((1+2)) [a-z]*"}`
	createPending(t, f.st, pendingSpec{tool: "bash", args: ascii})
	_, body := f.get(c, "/ui/pending")
	want := `{
  "cmd": "ls -la ./src | grep -v '~' && echo \"done\" 2>&1 > /dev/null; x=$((1+2)) [a-z]*"
}`
	if got := html.UnescapeString(preOf(t, body)); got != want {
		t.Errorf("plain arguments changed:\n%s\nwant\n%s", got, want)
	}
	if strings.Contains(preOf(t, body), `class="esc"`) {
		t.Error("plain ASCII arguments show an escape")
	}
}

func stringsToInt(s string) (int, error) {
	var n int
	_, err := fmt.Sscan(s, &n)
	return n, err
}

// cardOf returns the HTML of the pending card with this ID.
func cardOf(t *testing.T, body, id string) string {
	t.Helper()
	i := strings.Index(body, `<article class="card decision" id="d-`+id+`"`)
	if i < 0 {
		t.Fatalf("no card %s in the page", id)
	}
	j := strings.Index(body[i:], "</article>")
	return body[i : i+j]
}

// preOf returns the inner HTML of the first arguments block.
func preOf(t *testing.T, body string) string {
	t.Helper()
	const open = `<pre class="code args">`
	i := strings.Index(body, open)
	if i < 0 {
		t.Fatal("no arguments block")
	}
	j := strings.Index(body[i:], "</pre>")
	return body[i+len(open) : i+j]
}
