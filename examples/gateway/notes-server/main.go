// Command notes-server is a small MCP server over stdio that keeps plain-text notes,
// one file per note, in a directory. It is the example upstream the Warden gateway
// governs, and a real peer for the gateway's tests.
//
// Usage:
//
//	notes-server [-dir DIR]
//
// The directory is, in order: the -dir flag, the NOTES_DIR environment variable, or
// ".notes" in the working directory. It is created (mode 0700) when missing.
//
// Tools: list_notes, read_note {name}, write_note {name, text}, delete_note {name},
// search_notes {query}. A note name is 1 to 64 letters, digits, '-', '_' or '.', not
// starting with '.', so a name can never leave the directory; every file operation
// also goes through an [os.Root], so a symbolic link planted in the directory cannot
// lead out of it either.
//
// Several server processes may share one directory: a note is written to a temporary
// file that is renamed over the note, so a reader sees either the old or the new text,
// never a mix. Temporary files start with '.', so they are never listed as notes.
//
// The protocol runs on stdin and stdout; diagnostics go to stderr.
package main

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"flag"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/signal"
	"regexp"
	"slices"
	"strings"
	"syscall"

	"github.com/modelcontextprotocol/go-sdk/mcp"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	cfg, err := parseFlags(os.Args[1:], os.Getenv, os.Stderr)
	if errors.Is(err, flag.ErrHelp) {
		os.Exit(0)
	}
	if err != nil {
		os.Exit(2) // the flag package has printed the problem and the usage
	}
	if err := run(ctx, cfg, &mcp.StdioTransport{}, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "notes-server:", err)
		os.Exit(1)
	}
}

// config is the parsed command line.
type config struct {
	dir string
}

// parseFlags reads the command line; getenv supplies NOTES_DIR.
func parseFlags(args []string, getenv func(string) string, stderr io.Writer) (config, error) {
	def := getenv("NOTES_DIR")
	if def == "" {
		def = ".notes"
	}
	fset := flag.NewFlagSet("notes-server", flag.ContinueOnError)
	fset.SetOutput(stderr)
	var cfg config
	fset.StringVar(&cfg.dir, "dir", def, "directory holding the notes (default: $NOTES_DIR, else .notes)")
	if err := fset.Parse(args); err != nil {
		return config{}, err
	}
	if fset.NArg() > 0 {
		fmt.Fprintf(stderr, "notes-server: unexpected arguments %q\n", fset.Args())
		fset.Usage()
		return config{}, errors.New("unexpected arguments")
	}
	if cfg.dir == "" {
		fmt.Fprintln(stderr, "notes-server: -dir is empty")
		return config{}, errors.New("empty -dir")
	}
	return cfg, nil
}

// run serves the notes in cfg.dir over t until the client disconnects or ctx ends.
func run(ctx context.Context, cfg config, t mcp.Transport, stderr io.Writer) error {
	st, err := openStore(cfg.dir)
	if err != nil {
		return err
	}
	defer st.close()
	logger := slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: slog.LevelWarn}))
	err = newServer(st, logger).Run(ctx, t)
	if err == nil || errors.Is(err, io.EOF) || errors.Is(err, context.Canceled) {
		return nil // the client went away, or we were asked to stop
	}
	return err
}

// Limits on what a client can store.
const (
	maxNameLen   = 64
	maxNoteBytes = 64 << 10
	maxQueryLen  = 256
)

var namePattern = regexp.MustCompile(`^[A-Za-z0-9_-][A-Za-z0-9._-]{0,63}$`)

// checkName reports why name cannot name a note, or nil.
func checkName(name string) error {
	if !namePattern.MatchString(name) {
		return fmt.Errorf("invalid note name %q: use 1 to %d letters, digits, '-', '_' or '.', not starting with '.'", name, maxNameLen)
	}
	return nil
}

// store keeps notes as files in one directory. Its methods are safe for concurrent
// use, also by other processes sharing the directory.
type store struct {
	root *os.Root
}

func openStore(dir string) (*store, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return nil, fmt.Errorf("notes directory: %w", err)
	}
	root, err := os.OpenRoot(dir)
	if err != nil {
		return nil, fmt.Errorf("notes directory: %w", err)
	}
	return &store{root: root}, nil
}

func (s *store) close() error { return s.root.Close() }

func notFound(name string) error {
	return fmt.Errorf("note %q does not exist (list_notes shows the notes there are)", name)
}

// list returns the names of all notes, sorted.
func (s *store) list() ([]string, error) {
	entries, err := fs.ReadDir(s.root.FS(), ".")
	if err != nil {
		return nil, err
	}
	names := []string{}
	for _, e := range entries {
		if e.Type().IsRegular() && checkName(e.Name()) == nil {
			names = append(names, e.Name())
		}
	}
	slices.Sort(names)
	return names, nil
}

func (s *store) read(name string) (string, error) {
	if err := checkName(name); err != nil {
		return "", err
	}
	info, err := s.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
		return "", notFound(name)
	}
	if err != nil {
		return "", err
	}
	data, err := s.root.ReadFile(name)
	if errors.Is(err, fs.ErrNotExist) { // deleted by another process meanwhile
		return "", notFound(name)
	}
	return string(data), err
}

// write replaces the note's text atomically: through a temporary file renamed over
// the note.
func (s *store) write(name, text string) error {
	if err := checkName(name); err != nil {
		return err
	}
	if len(text) > maxNoteBytes {
		return fmt.Errorf("note text is %d bytes; the limit is %d", len(text), maxNoteBytes)
	}
	if info, err := s.root.Lstat(name); err == nil && !info.Mode().IsRegular() {
		return fmt.Errorf("%q exists and is not a note file", name)
	}
	var rnd [8]byte
	rand.Read(rnd[:])
	tmp := ".tmp-" + hex.EncodeToString(rnd[:])
	f, err := s.root.OpenFile(tmp, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o600)
	if err != nil {
		return err
	}
	_, err = f.WriteString(text)
	if err == nil {
		err = f.Sync()
	}
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = s.root.Rename(tmp, name)
	}
	if err != nil {
		s.root.Remove(tmp)
		return err
	}
	return nil
}

func (s *store) delete(name string) error {
	if err := checkName(name); err != nil {
		return err
	}
	info, err := s.root.Lstat(name)
	if errors.Is(err, fs.ErrNotExist) || (err == nil && !info.Mode().IsRegular()) {
		return notFound(name)
	}
	if err != nil {
		return err
	}
	if err := s.root.Remove(name); errors.Is(err, fs.ErrNotExist) {
		return notFound(name)
	} else if err != nil {
		return err
	}
	return nil
}

// match is one search hit: the note and its first line holding the query (empty
// when only the name matched).
type match struct {
	Name string `json:"name" jsonschema:"the note's name"`
	Line string `json:"line" jsonschema:"the first line holding the query, or empty when only the name matched"`
}

// search returns the notes whose name or text holds query, case-insensitively.
func (s *store) search(query string) ([]match, error) {
	if query == "" || len(query) > maxQueryLen {
		return nil, fmt.Errorf("query must be 1 to %d bytes", maxQueryLen)
	}
	names, err := s.list()
	if err != nil {
		return nil, err
	}
	q := strings.ToLower(query)
	matches := []match{}
	for _, name := range names {
		text, err := s.read(name)
		if err != nil {
			continue // deleted meanwhile, or unreadable: not a match
		}
		m := match{Name: name}
		found := strings.Contains(strings.ToLower(name), q)
		for line := range strings.Lines(text) {
			if strings.Contains(strings.ToLower(line), q) {
				m.Line = strings.TrimRight(line, "\r\n")
				found = true
				break
			}
		}
		if found {
			matches = append(matches, m)
		}
	}
	return matches, nil
}

// Tool inputs and outputs. Input schemas are written out (nameProperty, objectSchema)
// rather than inferred, so that they carry the name pattern and the size limits;
// output schemas are inferred from the output types.
type (
	noArgs   struct{}
	nameArgs struct {
		Name string `json:"name"`
	}
	writeArgs struct {
		Name string `json:"name"`
		Text string `json:"text"`
	}
	queryArgs struct {
		Query string `json:"query"`
	}

	listOut struct {
		Notes []string `json:"notes" jsonschema:"the names of all notes, sorted"`
	}
	noteOut struct {
		Name string `json:"name" jsonschema:"the note's name"`
		Text string `json:"text" jsonschema:"the note's text"`
	}
	writeOut struct {
		Name  string `json:"name" jsonschema:"the note's name"`
		Bytes int    `json:"bytes" jsonschema:"the size of the text written, in bytes"`
	}
	deleteOut struct {
		Name string `json:"name" jsonschema:"the deleted note's name"`
	}
	searchOut struct {
		Matches []match `json:"matches" jsonschema:"the matching notes, sorted by name"`
	}
)

var nameProperty = map[string]any{
	"type":        "string",
	"pattern":     namePattern.String(),
	"maxLength":   maxNameLen,
	"description": "The note's name: 1 to 64 letters, digits, '-', '_' or '.', not starting with '.'",
}

// objectSchema returns the input schema of an object with the given properties, all
// required, and no others.
func objectSchema(properties map[string]any) map[string]any {
	required := []string{}
	for k := range properties {
		required = append(required, k)
	}
	slices.Sort(required)
	return map[string]any{
		"type":                 "object",
		"properties":           properties,
		"required":             required,
		"additionalProperties": false,
	}
}

func ptr[T any](v T) *T { return &v }

func text(s string) []mcp.Content { return []mcp.Content{&mcp.TextContent{Text: s}} }

// newServer returns the MCP server serving st.
func newServer(st *store, logger *slog.Logger) *mcp.Server {
	s := mcp.NewServer(&mcp.Implementation{Name: "notes-server", Title: "Notes", Version: "1.0.0"},
		&mcp.ServerOptions{Logger: logger, Instructions: "Plain-text notes kept as files. Names: letters, digits, '-', '_' and '.'."})
	readOnly := &mcp.ToolAnnotations{ReadOnlyHint: true, IdempotentHint: true, OpenWorldHint: ptr(false)}

	mcp.AddTool(s, &mcp.Tool{
		Name:        "list_notes",
		Title:       "List notes",
		Description: "List the names of all notes, sorted.",
		InputSchema: objectSchema(map[string]any{}),
		Annotations: readOnly,
	}, func(_ context.Context, _ *mcp.CallToolRequest, _ noArgs) (*mcp.CallToolResult, listOut, error) {
		names, err := st.list()
		if err != nil {
			return nil, listOut{}, err
		}
		summary := "No notes."
		if len(names) > 0 {
			summary = strings.Join(names, "\n")
		}
		return &mcp.CallToolResult{Content: text(summary)}, listOut{Notes: names}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "read_note",
		Title:       "Read a note",
		Description: "Return the text of the note with the given name. Fails when there is no such note.",
		InputSchema: objectSchema(map[string]any{"name": nameProperty}),
		Annotations: readOnly,
	}, func(_ context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, noteOut, error) {
		t, err := st.read(in.Name)
		if err != nil {
			return nil, noteOut{}, err
		}
		return &mcp.CallToolResult{Content: text(t)}, noteOut{Name: in.Name, Text: t}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "write_note",
		Title:       "Write a note",
		Description: fmt.Sprintf("Create the note with the given name, or replace its whole text. The text is at most %d bytes.", maxNoteBytes),
		InputSchema: objectSchema(map[string]any{
			"name": nameProperty,
			"text": map[string]any{"type": "string", "maxLength": maxNoteBytes, "description": "The note's new text"},
		}),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: true, OpenWorldHint: ptr(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in writeArgs) (*mcp.CallToolResult, writeOut, error) {
		if err := st.write(in.Name, in.Text); err != nil {
			return nil, writeOut{}, err
		}
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("Wrote note %q (%d bytes).", in.Name, len(in.Text)))},
			writeOut{Name: in.Name, Bytes: len(in.Text)}, nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "delete_note",
		Title:       "Delete a note",
		Description: "Delete the note with the given name. Fails when there is no such note.",
		InputSchema: objectSchema(map[string]any{"name": nameProperty}),
		Annotations: &mcp.ToolAnnotations{DestructiveHint: ptr(true), IdempotentHint: false, OpenWorldHint: ptr(false)},
	}, func(_ context.Context, _ *mcp.CallToolRequest, in nameArgs) (*mcp.CallToolResult, deleteOut, error) {
		if err := st.delete(in.Name); err != nil {
			return nil, deleteOut{}, err
		}
		return &mcp.CallToolResult{Content: text(fmt.Sprintf("Deleted note %q.", in.Name))}, deleteOut(in), nil
	})

	mcp.AddTool(s, &mcp.Tool{
		Name:        "search_notes",
		Title:       "Search notes",
		Description: "Find the notes whose name or text contains the query, ignoring case. Returns each match with its first matching line.",
		InputSchema: objectSchema(map[string]any{
			"query": map[string]any{"type": "string", "minLength": 1, "maxLength": maxQueryLen, "description": "Text to look for, ignoring case"},
		}),
		Annotations: readOnly,
	}, func(_ context.Context, _ *mcp.CallToolRequest, in queryArgs) (*mcp.CallToolResult, searchOut, error) {
		matches, err := st.search(in.Query)
		if err != nil {
			return nil, searchOut{}, err
		}
		var b strings.Builder
		for _, m := range matches {
			fmt.Fprintf(&b, "%s: %s\n", m.Name, m.Line)
		}
		if len(matches) == 0 {
			b.WriteString("No note matches.")
		}
		return &mcp.CallToolResult{Content: text(strings.TrimRight(b.String(), "\n"))}, searchOut{Matches: matches}, nil
	})
	return s
}
