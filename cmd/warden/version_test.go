package main

import (
	"os/exec"
	goruntime "runtime"
	"runtime/debug"
	"strings"
	"testing"
)

func TestFormatVersion(t *testing.T) {
	const noVCS = "unknown (no version control information recorded, e.g. built by go run or go test)"
	tests := []struct {
		name string
		bi   *debug.BuildInfo
		want string
	}{
		{"no build info", nil, "warden (devel)\n  module:   unknown\n  go:       unknown\n  revision: " + noVCS + "\n  time:     unknown\n  modified: unknown\n"},
		{"go run", &debug.BuildInfo{GoVersion: "go1.26.0", Main: debug.Module{Path: "github.com/wardenhq/warden", Version: "(devel)"}},
			"warden (devel)\n  module:   github.com/wardenhq/warden\n  go:       go1.26.0\n  revision: " + noVCS + "\n  time:     unknown\n  modified: unknown\n"},
		{"release build", &debug.BuildInfo{
			GoVersion: "go1.26.0",
			Main:      debug.Module{Path: "github.com/wardenhq/warden", Version: "v1.2.3"},
			Settings: []debug.BuildSetting{
				{Key: "-buildmode", Value: "exe"},
				{Key: "vcs", Value: "git"},
				{Key: "vcs.revision", Value: "0123456789abcdef0123456789abcdef01234567"},
				{Key: "vcs.time", Value: "2026-12-01T10:00:00Z"},
				{Key: "vcs.modified", Value: "false"},
			},
		}, "warden v1.2.3\n  module:   github.com/wardenhq/warden\n  go:       go1.26.0\n  revision: 0123456789abcdef0123456789abcdef01234567\n  time:     2026-12-01T10:00:00Z\n  modified: false\n"},
		{"dirty tree, no time", &debug.BuildInfo{
			Main:     debug.Module{Path: "github.com/wardenhq/warden", Version: "v0.0.0-20261201100000-0123456789ab+dirty"},
			Settings: []debug.BuildSetting{{Key: "vcs.revision", Value: "0123456789ab"}, {Key: "vcs.modified", Value: "true"}},
		}, "warden v0.0.0-20261201100000-0123456789ab+dirty\n  module:   github.com/wardenhq/warden\n  go:       unknown\n  revision: 0123456789ab\n  time:     unknown\n  modified: true\n"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if got := formatVersion(tt.bi); got != tt.want {
				t.Errorf("got\n%s\nwant\n%s", got, tt.want)
			}
		})
	}
}

// TestVersionBinary runs the built binary: --version and version print the same text,
// and it agrees with what `go version -m` reads from the same binary (whether or not
// this build recorded a VCS revision: GOFLAGS=-buildvcs=false and git worktrees record
// none).
func TestVersionBinary(t *testing.T) {
	bin := wardenBinary(t)
	flag := execBinary(t, bin, t.TempDir(), nil, "--version")
	sub := execBinary(t, bin, t.TempDir(), nil, "version")
	if flag.code != 0 || sub.code != 0 || flag.stderr != "" || sub.stderr != "" {
		t.Fatalf("--version: exit %d, stderr %q; version: exit %d, stderr %q", flag.code, flag.stderr, sub.code, sub.stderr)
	}
	if flag.stdout != sub.stdout {
		t.Errorf("--version printed\n%s\nversion printed\n%s", flag.stdout, sub.stdout)
	}

	out, err := exec.Command("go", "version", "-m", bin).Output()
	if err != nil {
		t.Fatalf("go version -m: %v", err)
	}
	version, settings := "", map[string]string{}
	for line := range strings.Lines(string(out)) {
		f := strings.Split(strings.TrimSpace(line), "\t")
		switch {
		case len(f) >= 3 && f[0] == "mod":
			version = f[2]
		case len(f) == 2 && f[0] == "build":
			if k, v, ok := strings.Cut(f[1], "="); ok {
				settings[k] = v
			}
		}
	}
	want := formatVersion(&debug.BuildInfo{
		GoVersion: goruntime.Version(), // the binary is built by the toolchain that built this test
		Main:      debug.Module{Path: "github.com/wardenhq/warden", Version: version},
		Settings: []debug.BuildSetting{
			{Key: "vcs.revision", Value: settings["vcs.revision"]},
			{Key: "vcs.time", Value: settings["vcs.time"]},
			{Key: "vcs.modified", Value: settings["vcs.modified"]},
		},
	})
	if flag.stdout != want {
		t.Errorf("warden --version printed\n%s\nwant (from go version -m)\n%s", flag.stdout, want)
	}
	if !strings.HasPrefix(flag.stdout, "warden "+version+"\n") {
		t.Errorf("first line of %q does not name the module version %q", flag.stdout, version)
	}
}

func TestVersionTakesNoArguments(t *testing.T) {
	r := runWarden(t, "version", "extra")
	if r.code != exitUsage || !strings.Contains(r.stderr, "warden version --help") {
		t.Errorf("exit %d, stderr %q; want a usage error", r.code, r.stderr)
	}
}
