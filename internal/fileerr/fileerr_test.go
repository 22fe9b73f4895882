package fileerr_test

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	"github.com/wardenhq/warden/internal/fileerr"
)

func TestText(t *testing.T) {
	_, err := os.ReadFile(filepath.Join(t.TempDir(), "missing.yaml"))
	if got := fileerr.Text(err); got != "no such file or directory" {
		t.Errorf("Text(%v) = %q", err, got)
	}
	if got := fileerr.Text(fmt.Errorf("loading: %w", err)); got != "no such file or directory" {
		t.Errorf("wrapped: %q", got)
	}
	if got := fileerr.Text(errors.New("bad key")); got != "bad key" {
		t.Errorf("plain error: %q", got)
	}
}
