package upstream

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

// decodeCorpus holds single messages, valid and not, on which decodeMessage must
// agree with the SDK's jsonrpc.DecodeMessage.
var decodeCorpus = []string{
	`{"jsonrpc":"2.0","id":1,"result":{"content":[{"type":"text","text":"hi"}]}}`,
	`{"jsonrpc":"2.0","id":"a-1","method":"tools/call","params":{"name":"echo","arguments":{"text":"x"}}}`,
	`{"jsonrpc":"2.0","method":"notifications/progress","params":{"progressToken":"t","progress":1}}`,
	`{"jsonrpc":"2.0","method":"notifications/initialized"}`,
	`{"jsonrpc":"2.0","id":7,"error":{"code":-32602,"message":"unknown junk","data":{"x":[1, 2]}}}`,
	`{"jsonrpc":"2.0","id":7,"error":null,"result":{}}`,
	`{"jsonrpc":"2.0","id":7,"result":null}`,
	`{"jsonrpc":"2.0","id":7}`,
	`{"jsonrpc":"2.0","id":null,"method":"m","params":null}`,
	`{"jsonrpc":"2.0","id":1.5,"result":1}`,
	`{"jsonrpc":"2.0","id":-3e2,"result":1}`,
	`{"jsonrpc":"2.0","id":9007199254740993,"result":1}`,
	`{"jsonrpc":"2.0","id":"\u0041\n","result":1}`,
	`{"jsonrpc":"2.0","id":true,"result":1}`,
	`{"jsonrpc":"2.0","id":{},"result":1}`,
	`{"jsonrpc":"2.0","id":[1],"result":1}`,
	`{"jsonrpc":"2.0","id":1e400,"result":1}`,
	`{"jsonrpc":"2.0","result":1}`,
	`{"jsonrpc":"2.0","id":null,"result":1}`,
	`{"jsonrpc":"2.0","method":"","id":2}`,
	`{"jsonrpc":"2.0","method":null,"id":2}`,
	`{"jsonrpc":"2.0","method":5,"id":2}`,
	`{"jsonrpc":"1.0","id":1,"result":1}`,
	`{"jsonrpc":2,"id":1,"result":1}`,
	`{"jsonrpc":null,"id":1,"result":1}`,
	`{"id":1,"result":1}`,
	`{"JSONRPC":"2.0","ID":1,"Result":1}`,
	`{"jsonrpc":"2.0","ID":1,"result":1}`,
	`{"jsonrpc":"2.0","id":1,"Result":1,"result":2}`,
	`{"jsonrpc":"2.0","id":1,"result":1,"result":{"a":"b"}}`,
	`{"jsonrpc":"2.0","id":1,"id":2,"result":1}`,
	`{"jsonrpc":"2.0","jsonrpc":"1.0","id":1,"result":1}`,
	`{"json\u0072pc":"2.0","id":1,"result":1}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":"x","message":7}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1.5,"message":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"Code":3,"MESSAGE":"m"}}`,
	`{"jsonrpc":"2.0","id":1,"error":"boom"}`,
	`{"jsonrpc":"2.0","id":1,"error":{}}`,
	`{"jsonrpc":"2.0","id":1,"error":{"code":1,"message":"m","data":null}}`,
	`{"jsonrpc":"2.0","id":1,"result":[1,2,3]}`,
	`{"jsonrpc":"2.0","id":1,"result":"<b>&amp;</b>"}`,
	` { "jsonrpc" : "2.0" , "id" : 1 , "result" : { "a" : [ 1 , { } ] } } `,
	"{\n\"jsonrpc\":\"2.0\",\n\"id\":1,\n\"result\":{\n\"tools\":[null,\n\t{\"name\":\"ok\"}]}\n}",
	`{"jsonrpc":"2.0","id":1,"result":{"s":"a \"quoted\" } ] string\\"}}`,
	`{"jsonrpc":"2.0","id":1,"extra":{"deep":[[[]]]},"result":1}`,
	`{}`,
	`null`,
	`5`,
	`"x"`,
}

func TestDecodeMessageMatchesSDK(t *testing.T) {
	for _, in := range decodeCorpus {
		want, wantErr := jsonrpc.DecodeMessage([]byte(in))
		if !json.Valid([]byte(in)) {
			t.Fatalf("corpus entry is not valid JSON: %s", in)
		}
		buf := []byte(in)
		got, gotErr := decodeMessage(buf)
		if (wantErr == nil) != (gotErr == nil) {
			t.Errorf("%s:\n got  %#v, %v\n want %#v, %v", in, got, gotErr, want, wantErr)
			continue
		}
		if wantErr != nil {
			continue
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s:\n got  %#v\n want %#v", in, got, want)
		}
		// Nothing decoded shares the input: overwrite it and compare again.
		for i := range buf {
			buf[i] = 'X'
		}
		if !reflect.DeepEqual(got, want) {
			t.Errorf("%s: the decoded message changed with its input", in)
		}
	}
}

func TestDecodeFrameBatch(t *testing.T) {
	msgs, batch, err := decodeFrame([]byte(`[{"jsonrpc":"2.0","id":1,"method":"ping"}, {"jsonrpc":"2.0","id":2,"result":{}}]`))
	if err != nil || !batch || len(msgs) != 2 {
		t.Fatalf("decodeFrame(batch) = %v, %v, %v; want 2 messages of a batch", msgs, batch, err)
	}
	if r, ok := msgs[0].(*jsonrpc.Request); !ok || r.Method != "ping" {
		t.Errorf("first = %#v, want the ping request", msgs[0])
	}
	for _, in := range []string{`[]`, `[1]`, `[{"jsonrpc":"2.0","id":1,"method":"ping"},null]`, `{"jsonrpc":"2.0",}`, `{"a":1}{"b":2}`} {
		if msgs, _, err := decodeFrame([]byte(in)); err == nil {
			t.Errorf("decodeFrame(%s) = %v, want an error", in, msgs)
		}
	}
}

// encodeCorpus holds messages whose encoding must be the SDK's plus a newline.
func encodeCorpus() []jsonrpc.Message {
	id, _ := jsonrpc.MakeID(float64(3))
	sid, _ := jsonrpc.MakeID("s-1")
	return []jsonrpc.Message{
		&jsonrpc.Request{ID: id, Method: "tools/call", Params: json.RawMessage(`{"name":"echo","arguments":{"text":"<&>"}}`)},
		&jsonrpc.Request{Method: "notifications/initialized"},
		&jsonrpc.Request{ID: sid, Method: "ping", Params: json.RawMessage(` { "a" : 1 } `)},
		&jsonrpc.Response{ID: id, Result: json.RawMessage(`{"content":[]}`)},
		&jsonrpc.Response{ID: sid, Error: &jsonrpc.Error{Code: -32601, Message: "no such method", Data: json.RawMessage(`{"m":"x"}`)}},
		&jsonrpc.Response{ID: sid, Error: errors.New("plain failure")},
		&jsonrpc.Response{ID: sid, Error: wrapErr{&jsonrpc.Error{Code: -32000, Message: "inner"}}},
	}
}

type wrapErr struct{ err error }

func (w wrapErr) Error() string { return "outer: " + w.err.Error() }
func (w wrapErr) Unwrap() error { return w.err }

func TestEncodeLineMatchesSDK(t *testing.T) {
	e := encodeBuffers.Get().(*encodeBuffer)
	for _, m := range encodeCorpus() {
		want, err := jsonrpc.EncodeMessage(m)
		if err != nil {
			t.Fatal(err)
		}
		e.buf.Reset()
		if err := e.encodeLine(m); err != nil {
			t.Fatalf("encodeLine(%#v): %v", m, err)
		}
		if got := e.buf.String(); got != string(want)+"\n" {
			t.Errorf("encodeLine(%#v) = %q, want %q", m, got, string(want)+"\n")
		}
	}
	e.buf.Reset()
	if err := e.encodeLine(&jsonrpc.Request{Method: "m", Params: json.RawMessage(`{bad`)}); err == nil {
		t.Errorf("encodeLine of invalid params: no error, wrote %q", e.buf.String())
	}
}

// TestFrameReader covers the framing: messages per line, blank lines, messages
// spanning lines or the read buffer, and the refusals.
func TestFrameReader(t *testing.T) {
	long := `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("y", 3*stdioReadBuffer) + `"}`
	in := "\n\r\n  " + `{"jsonrpc":"2.0","id":1,"result":1}` + "\n" +
		`{"jsonrpc":"2.0","id":2,"result":2}` + "\r\n" +
		"{\"jsonrpc\":\"2.0\",\n \"id\":3,\n \"result\":\"a\\\"}\\n\"}\n" +
		long + "\n" +
		`[{"jsonrpc":"2.0","id":4,"result":4}]` // no final newline
	fr := newFrameReader(strings.NewReader(in), 1<<20)
	var got []string
	for {
		f, err := fr.next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("next after %d frames: %v", len(got), err)
		}
		got = append(got, string(f))
	}
	want := []string{`{"jsonrpc":"2.0","id":1,"result":1}`, `{"jsonrpc":"2.0","id":2,"result":2}`, "{\"jsonrpc\":\"2.0\",\n \"id\":3,\n \"result\":\"a\\\"}\\n\"}", long, `[{"jsonrpc":"2.0","id":4,"result":4}]`}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("frames:\n got  %q\n want %q", got, want)
	}

	for _, tc := range []struct {
		name, in string
		limit    int
		want     string
		is       error
	}{
		{"too long", `{"jsonrpc":"2.0","id":1,"result":"` + strings.Repeat("z", 100) + `"}` + "\n", 64, "message longer than the line length limit (64 bytes)", errLineTooLong},
		{"too long across lines", "{\"a\":\n" + strings.Repeat(" ", 70) + "\n1}\n", 64, "longer than the line length limit", errLineTooLong},
		{"not an object", "}{ this is not json\n", 1 << 20, `want a JSON-RPC object or batch array, got a line starting "}{ this is not json"`, nil},
		{"trailing data", `{"jsonrpc":"2.0","id":1,"result":1} {"x":1}` + "\n", 1 << 20, `data after the end of a message on its line, starting " {\"x\":1}"`, nil},
		{"ends inside", `{"jsonrpc":"2.0","id":1,`, 1 << 20, "the server's output ended inside a message", io.ErrUnexpectedEOF},
		{"line end in a string", "{\"jsonrpc\":\"2.0\",\"id\":1,\"result\":\"open\n", 1 << 20, `control character '\n' inside a string`, nil},
		{"too deep", strings.Repeat("[", stdioMaxDepth+1), 1 << 20, "nested deeper than 1000 levels", nil},
	} {
		_, err := newFrameReader(strings.NewReader(tc.in), tc.limit).next()
		if err == nil || !strings.Contains(err.Error(), tc.want) || (tc.is != nil && !errors.Is(err, tc.is)) {
			t.Errorf("%s: next() = %v, want an error holding %q (is %v)", tc.name, err, tc.want, tc.is)
		}
	}
}

// TestFrameReaderKeepsLongBufferBounded: a huge message's buffer is not kept.
func TestFrameReaderKeepsLongBufferBounded(t *testing.T) {
	huge := `{"r":"` + strings.Repeat("h", 2*stdioKeepLong) + `"}` + "\n"
	fr := newFrameReader(strings.NewReader(huge+`{"r":1}`+"\n"), 1<<22)
	if f, err := fr.next(); err != nil || !bytes.HasPrefix(f, []byte(`{"r":"hhh`)) {
		t.Fatalf("huge frame: %.20q, %v", f, err)
	}
	if f, err := fr.next(); err != nil || string(f) != `{"r":1}` {
		t.Fatalf("next frame: %q, %v", f, err)
	}
	if c := cap(fr.long); c > stdioKeepLong {
		t.Errorf("kept a %d-byte buffer after a huge message, want at most %d", c, stdioKeepLong)
	}
}
