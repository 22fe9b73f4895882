// An in-memory pin store, for library use without a database.

package pin

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sync"

	"github.com/wardenhq/warden/store"
)

// Memory is a [Store] held in memory, for library use without a database: the
// first definition of each tool seen is trusted, and a change while the process runs
// (after a tools/list_changed, or on another connection) quarantines the tool. Nothing
// survives the process, so a definition that changed between two runs is not noticed;
// use a [store.Store] for pins that last (and `warden pins` to review changes).
//
// The zero value is empty and ready to use. A Memory is safe for concurrent use.
// Pins are copied in and out: changing a returned pin changes nothing stored.
type Memory struct {
	mu   sync.Mutex
	pins map[string]store.Pin
}

var _ Store = (*Memory)(nil)

// GetPin returns the pin of the tool name, or an error wrapping [store.ErrNotFound].
func (m *Memory) GetPin(_ context.Context, name string) (store.Pin, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	p, ok := m.pins[name]
	if !ok {
		return store.Pin{}, fmt.Errorf("pin %q: %w", name, store.ErrNotFound)
	}
	return clonePin(p), nil
}

// PutPin stores p under p.Name, replacing any pin of that name.
func (m *Memory) PutPin(_ context.Context, p store.Pin) error {
	if p.Name == "" {
		return errors.New("pin: the tool name is required")
	}
	m.mu.Lock()
	defer m.mu.Unlock()
	if m.pins == nil {
		m.pins = map[string]store.Pin{}
	}
	m.pins[p.Name] = clonePin(p)
	return nil
}

func clonePin(p store.Pin) store.Pin {
	p.Definition = slices.Clone(p.Definition)
	p.Pending = slices.Clone(p.Pending)
	return p
}
