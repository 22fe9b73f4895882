package main

import "testing"

func TestValidateGolden(t *testing.T) {
	tests := []struct {
		name string
		args []string
		code int
	}{
		{"validate-ok", []string{"validate", codingPolicy, rolesPolicy}, 0},
		{"validate-role", []string{"validate", "--role", "viewer", rolesPolicy}, 0},
		// Every problem of a file is reported, one per line, and the good file is
		// still validated.
		{"validate-errors", []string{"validate", codingPolicy, "testdata/bad/unknown-key.yaml", "testdata/bad/bad-cel.yaml", "testdata/validate/many-errors.yaml"}, exitUsage},
		{"validate-no-files", []string{"validate"}, exitUsage},
		// Warnings are located like errors, go to stderr, and leave the exit code 0;
		// the condition cost estimates go to stdout.
		{"validate-warnings", []string{"validate", "testdata/validate/warnings.yaml"}, 0},
		// A file with shadow items (its enforcing revision, and the shadow's), a shadow
		// file (valid as one), and a shadow file with a mistake.
		{"validate-shadow", []string{"validate", "testdata/validate/shadow-items.yaml", "testdata/validate/shadow-file.yaml", "testdata/validate/shadow-bad.yaml"}, exitUsage},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := runWarden(t, tt.args...)
			if r.code != tt.code {
				t.Errorf("exit %d, want %d", r.code, tt.code)
			}
			golden(t, tt.name, r.transcript(tt.args))
		})
	}
}
