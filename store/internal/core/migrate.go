package core

import (
	"fmt"
	"io/fs"
	"slices"
	"strconv"
	"strings"
)

// EachMigration calls apply for each migrations/NNN_name.sql file of fsys in file name
// order, with the version number the name starts with, the base name and the body. It
// stops at the first error; apply's errors are wrapped with the migration's name.
func EachMigration(fsys fs.FS, apply func(version int, name, body string) error) error {
	names, err := fs.Glob(fsys, "migrations/*.sql")
	if err != nil {
		return err
	}
	slices.Sort(names)
	for _, name := range names {
		base := strings.TrimPrefix(name, "migrations/")
		digits, _, _ := strings.Cut(base, "_")
		version, err := strconv.Atoi(digits)
		if err != nil {
			return fmt.Errorf("migration %s: name must start with a version number", base)
		}
		body, err := fs.ReadFile(fsys, name)
		if err != nil {
			return err
		}
		if err := apply(version, base, string(body)); err != nil {
			return fmt.Errorf("migration %s: %w", base, err)
		}
	}
	return nil
}
