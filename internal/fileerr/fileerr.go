// Package fileerr words a file error for a message that already names the file: the
// operating system's reason alone ("no such file or directory"), without the
// operation and path an *os.PathError repeats. It is shared by every package that
// reads a file users write (policies, policy tests, agent files, the workspace, the
// checkpoint key), so their messages read alike.
package fileerr

import (
	"errors"
	"os"
)

// Text is err's reason: for an *os.PathError (anywhere in err's chain) its underlying
// error, otherwise err itself.
func Text(err error) string {
	var pe *os.PathError
	if errors.As(err, &pe) {
		return pe.Err.Error()
	}
	return err.Error()
}
