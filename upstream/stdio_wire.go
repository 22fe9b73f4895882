// The wire format of the stdio connection to an upstream server: newline-delimited
// JSON-RPC messages, framed with a reusable buffer and decoded without the SDK's
// per-message 32 KiB decoder buffer (see [commandTransport]).

package upstream

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"sync"

	"github.com/modelcontextprotocol/go-sdk/jsonrpc"
)

const (
	// stdioReadBuffer is the size of a connection's read buffer: a message that
	// fits is framed and decoded in place.
	stdioReadBuffer = 16 << 10
	// stdioKeepLong bounds the buffer a connection keeps for messages longer than
	// its read buffer; a longer one is dropped after use.
	stdioKeepLong = 256 << 10
	// stdioMaxDepth is the nesting depth beyond which a message is refused, as the
	// SDK's decoder refuses it.
	stdioMaxDepth = 1000
)

// errLineTooLong means a message exceeded the connection's MaxLineLength.
var errLineTooLong = errors.New("message longer than the line length limit")

// frameReader splits a server's output into messages. As with the SDK's stdio
// connection, each message is one JSON object (or a batch array), which must be
// followed by a line end (or the end of the output); blank lines between messages
// are skipped, and a message may span lines (the MCP specification forbids that,
// the SDK accepts it).
type frameReader struct {
	r     *bufio.Reader
	limit int    // most bytes in one message
	long  []byte // a message that spans lines or outgrows r's buffer
}

func newFrameReader(r io.Reader, limit int) *frameReader {
	return &frameReader{r: bufio.NewReaderSize(r, stdioReadBuffer), limit: limit}
}

// next returns the bytes of the next message, valid until the following call. It
// returns io.EOF when the output ends between messages, and an error wrapping
// io.ErrUnexpectedEOF when it ends inside one.
func (f *frameReader) next() ([]byte, error) {
	if cap(f.long) > stdioKeepLong {
		f.long = nil
	}
	f.long = f.long[:0]
	var (
		started bool
		sc      frameScanner
	)
	for {
		chunk, err := f.r.ReadSlice('\n')
		if len(chunk) > 0 {
			data := chunk
			if !started {
				data = data[skipSpace(data, 0):]
				if len(data) > 0 {
					if c := data[0]; c != '{' && c != '[' {
						return nil, fmt.Errorf("invalid message: want a JSON-RPC object or batch array, got a line starting %s", quoteStart(data))
					}
					started = true
				}
			}
			if started {
				end, done, serr := sc.scan(data)
				if serr != nil {
					return nil, serr
				}
				n := len(data)
				if done {
					n = end
				}
				if len(f.long)+n > f.limit {
					return nil, fmt.Errorf("%w (%d bytes): the server's message was not read; raise the limit or make the server send less in one message", errLineTooLong, f.limit)
				}
				if done {
					for _, c := range data[end:] {
						if c != '\n' && c != '\r' {
							return nil, fmt.Errorf("invalid message: data after the end of a message on its line, starting %s (one message per line)", quoteStart(data[end:]))
						}
					}
					if len(f.long) == 0 {
						return data[:end], nil
					}
					f.long = append(f.long, data[:end]...)
					return f.long, nil
				}
				f.long = append(f.long, data...)
			}
		}
		switch {
		case err == nil, errors.Is(err, bufio.ErrBufferFull):
		case errors.Is(err, io.EOF) && started:
			return nil, fmt.Errorf("the server's output ended inside a message (after %d bytes of it): %w", len(f.long), io.ErrUnexpectedEOF)
		default:
			return nil, err
		}
	}
}

// quoteStart renders the first bytes of b for an error.
func quoteStart(b []byte) string {
	b = bytes.TrimRight(b, "\r\n")
	if len(b) > 40 {
		return strconv.Quote(string(b[:40])) + "..."
	}
	return strconv.Quote(string(b))
}

// frameScanner finds the end of a JSON object or array across chunks: it tracks
// the nesting depth outside strings. Beyond a control character in a string and
// the depth limit, it does not validate: the decoder does.
type frameScanner struct {
	depth      int
	inStr, esc bool
}

// scan consumes data; done reports that the value ended at data[end-1].
func (s *frameScanner) scan(data []byte) (end int, done bool, err error) {
	for i, c := range data {
		if s.inStr {
			switch {
			case s.esc:
				s.esc = false
			case c == '\\':
				s.esc = true
			case c == '"':
				s.inStr = false
			case c < 0x20:
				// Invalid JSON, refused at once: a line ending inside a string
				// must not make the reader wait for more lines.
				return 0, false, fmt.Errorf("invalid message: control character %q inside a string (a line end must be escaped as \\n)", c)
			}
			continue
		}
		switch c {
		case '"':
			s.inStr = true
		case '{', '[':
			s.depth++
			if s.depth > stdioMaxDepth {
				return 0, false, fmt.Errorf("invalid message: nested deeper than %d levels", stdioMaxDepth)
			}
		case '}', ']':
			s.depth--
			if s.depth <= 0 {
				return i + 1, true, nil
			}
		}
	}
	return 0, false, nil
}

func skipSpace(b []byte, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\r', '\n':
			i++
		default:
			return i
		}
	}
	return i
}

// decodeFrame decodes one framed message: a JSON-RPC object, or a batch array of
// them (batch true). It decodes what jsonrpc.DecodeMessage decodes, to the same
// messages, and refuses what it refuses (in words of its own); keys match exactly,
// as in the SDK. The messages share no memory with frame.
func decodeFrame(frame []byte) (msgs []jsonrpc.Message, batch bool, err error) {
	if !json.Valid(frame) {
		return nil, false, fmt.Errorf("invalid message: not valid JSON: %w", syntaxError(frame))
	}
	i := skipSpace(frame, 0)
	if i < len(frame) && frame[i] == '[' {
		err := elements(frame, func(elem []byte) error {
			m, err := decodeMessage(elem)
			if err != nil {
				return err
			}
			msgs = append(msgs, m)
			return nil
		})
		if err != nil {
			return nil, true, err
		}
		if len(msgs) == 0 {
			return nil, true, errors.New("invalid message: empty batch")
		}
		return msgs, true, nil
	}
	m, err := decodeMessage(frame)
	if err != nil {
		return nil, false, err
	}
	return []jsonrpc.Message{m}, false, nil
}

// syntaxError returns encoding/json's account of why b is not valid JSON.
func syntaxError(b []byte) error {
	var v any
	if err := json.Unmarshal(b, &v); err != nil {
		return err
	}
	return errors.New("invalid JSON")
}

// decodeMessage decodes one JSON-RPC message from valid JSON.
func decodeMessage(b []byte) (jsonrpc.Message, error) {
	var (
		version              string
		id                   any
		method               []byte
		params, result, werr []byte
		hasMethod, hasError  bool
	)
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: want a JSON object, got %s", quoteStart(b[i:]))
	}
	err := members(b, func(key, val []byte) error {
		switch key := unquoteKey(key); key {
		case "jsonrpc":
			if string(val) == `"2.0"` {
				version = "2.0"
				return nil
			}
			return unmarshalField("jsonrpc", val, &version)
		case "id":
			return decodeID(val, &id)
		case "method":
			method, hasMethod = val, true
		case "params":
			params = val
		case "result":
			result = val
		case "error":
			werr, hasError = val, true
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	if version != "2.0" {
		return nil, fmt.Errorf("invalid message version tag %q; expected %q", version, "2.0")
	}
	mid, err := jsonrpc.MakeID(id)
	if err != nil {
		return nil, err
	}
	if hasMethod {
		var name string
		if err := unmarshalField("method", method, &name); err != nil {
			return nil, err
		}
		return &jsonrpc.Request{Method: name, ID: mid, Params: rawCopy(params)}, nil
	}
	if !mid.IsValid() {
		return nil, &jsonrpc.Error{Code: jsonrpc.CodeInvalidRequest, Message: "invalid request"}
	}
	resp := &jsonrpc.Response{ID: mid, Result: rawCopy(result)}
	if hasError && string(werr) != "null" {
		we, err := decodeWireError(werr)
		if err != nil {
			return nil, err
		}
		resp.Error = we
	}
	return resp, nil
}

// members calls fn with the raw key (quoted) and value of each member of the JSON
// object in valid JSON b, in order.
func members(b []byte, fn func(key, val []byte) error) error {
	i := skipSpace(b, 0) + 1 // past '{'
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return errors.New("unmarshaling jsonrpc message: truncated object")
		}
		if b[i] == '}' {
			return nil
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		kEnd := skipValue(b, i)
		key := b[i:kEnd]
		i = skipSpace(b, kEnd)
		if i >= len(b) || b[i] != ':' {
			return errors.New("unmarshaling jsonrpc message: malformed object")
		}
		i = skipSpace(b, i+1)
		vEnd := skipValue(b, i)
		if err := fn(key, b[i:vEnd]); err != nil {
			return err
		}
		i = vEnd
	}
}

// elements calls fn with each element of the JSON array in valid JSON b.
func elements(b []byte, fn func(elem []byte) error) error {
	i := skipSpace(b, 0) + 1 // past '['
	for {
		i = skipSpace(b, i)
		if i >= len(b) {
			return errors.New("unmarshaling jsonrpc batch: truncated array")
		}
		if b[i] == ']' {
			return nil
		}
		if b[i] == ',' {
			i = skipSpace(b, i+1)
		}
		end := skipValue(b, i)
		if err := fn(b[i:end]); err != nil {
			return err
		}
		i = end
	}
}

// skipValue returns the end of the JSON value starting at b[i], in valid JSON.
func skipValue(b []byte, i int) int {
	if i >= len(b) {
		return i
	}
	switch b[i] {
	case '"':
		for j := i + 1; j < len(b); j++ {
			switch b[j] {
			case '\\':
				j++
			case '"':
				return j + 1
			}
		}
		return len(b)
	case '{', '[':
		var s frameScanner
		if end, done, _ := s.scan(b[i:]); done {
			return i + end
		}
		return len(b)
	}
	for j := i; j < len(b); j++ {
		switch b[j] {
		case ',', '}', ']', ' ', '\t', '\r', '\n':
			return j
		}
	}
	return len(b)
}

// unquoteKey returns the text of the quoted JSON string key, which holds no escape
// in every message worth a fast path.
func unquoteKey(key []byte) string {
	if len(key) >= 2 && bytes.IndexByte(key, '\\') < 0 {
		return string(key[1 : len(key)-1]) // compared, not kept: no allocation
	}
	var s string
	if json.Unmarshal(key, &s) != nil {
		return ""
	}
	return s
}

func unmarshalField(name string, val []byte, v any) error {
	if err := json.Unmarshal(val, v); err != nil {
		return fmt.Errorf("unmarshaling jsonrpc message: field %q: %w", name, err)
	}
	return nil
}

// decodeID decodes a JSON-RPC id into what encoding/json would give an any (nil,
// float64, string, or another type MakeID refuses).
func decodeID(val []byte, id *any) error {
	switch c := val[0]; {
	case c == 'n':
		*id = nil
	case c == '"' && bytes.IndexByte(val, '\\') < 0:
		*id = string(val[1 : len(val)-1])
	case c == '-' || ('0' <= c && c <= '9'):
		f, err := strconv.ParseFloat(string(val), 64)
		if err != nil {
			return fmt.Errorf("unmarshaling jsonrpc message: field \"id\": %w", err)
		}
		*id = f
	default:
		var v any
		if err := unmarshalField("id", val, &v); err != nil {
			return err
		}
		*id = v
	}
	return nil
}

// rawCopy returns a copy of val, or nil for an absent one.
func rawCopy(val []byte) json.RawMessage {
	if val == nil {
		return nil
	}
	return bytes.Clone(val)
}

// decodeWireError decodes a response's error object, its keys matched exactly.
func decodeWireError(val []byte) (*jsonrpc.Error, error) {
	if val[0] != '{' {
		return nil, fmt.Errorf("unmarshaling jsonrpc message: field \"error\": want an object, got %s", quoteStart(val))
	}
	we := &jsonrpc.Error{}
	err := members(val, func(key, v []byte) error {
		switch unquoteKey(key) {
		case "code":
			return unmarshalField("error.code", v, &we.Code)
		case "message":
			return unmarshalField("error.message", v, &we.Message)
		case "data":
			we.Data = rawCopy(v)
		}
		return nil
	})
	if err != nil {
		return nil, err
	}
	return we, nil
}

// wireMessage is the wire form of a JSON-RPC message, as the SDK encodes it.
type wireMessage struct {
	VersionTag string          `json:"jsonrpc"`
	ID         any             `json:"id,omitempty"`
	Method     string          `json:"method,omitempty"`
	Params     json.RawMessage `json:"params,omitempty"`
	Result     json.RawMessage `json:"result,omitempty"`
	Error      *jsonrpc.Error  `json:"error,omitempty"`
}

// wireError is the error of a response on the wire, as the SDK renders it: a
// *jsonrpc.Error as it is, another error as its text with the code of a
// *jsonrpc.Error it wraps.
func wireError(err error) *jsonrpc.Error {
	if err == nil {
		return nil
	}
	if we, ok := err.(*jsonrpc.Error); ok {
		return we
	}
	we := &jsonrpc.Error{Message: err.Error()}
	var wrapped *jsonrpc.Error
	if errors.As(err, &wrapped) {
		we.Code = wrapped.Code
	}
	return we
}

// An encodeBuffer encodes messages into a buffer reused across writes.
type encodeBuffer struct {
	buf bytes.Buffer
	enc *json.Encoder
}

var encodeBuffers = sync.Pool{New: func() any {
	e := &encodeBuffer{}
	e.enc = json.NewEncoder(&e.buf)
	e.enc.SetEscapeHTML(false)
	return e
}}

// maxPooledEncode bounds the buffers returned to encodeBuffers.
const maxPooledEncode = 64 << 10

// encodeLine appends msg to e's buffer as jsonrpc.EncodeMessage encodes it,
// followed by a newline.
func (e *encodeBuffer) encodeLine(msg jsonrpc.Message) error {
	w := wireMessage{VersionTag: "2.0"}
	switch m := msg.(type) {
	case *jsonrpc.Request:
		w.ID, w.Method, w.Params = m.ID.Raw(), m.Method, m.Params
	case *jsonrpc.Response:
		w.ID, w.Error, w.Result = m.ID.Raw(), wireError(m.Error), m.Result
	default:
		return fmt.Errorf("marshaling message: unknown JSON-RPC message type %T", msg)
	}
	if err := e.enc.Encode(&w); err != nil { // Encode ends the line
		return fmt.Errorf("marshaling message: %w", err)
	}
	return nil
}

// encodeBatch appends the responses to an incoming batch as one line holding their
// array, as the SDK renders it.
func (e *encodeBuffer) encodeBatch(batch []*jsonrpc.Response) error {
	raws := make([]json.RawMessage, 0, len(batch))
	for _, r := range batch {
		if err := e.encodeLine(r); err != nil {
			return fmt.Errorf("encoding batch message: %w", err)
		}
		raws = append(raws, bytes.Clone(bytes.TrimSuffix(e.buf.Bytes(), []byte("\n"))))
		e.buf.Reset()
	}
	data, err := json.Marshal(raws)
	if err != nil {
		return fmt.Errorf("encoding batch: %w", err)
	}
	e.buf.Write(data)
	e.buf.WriteByte('\n')
	return nil
}
