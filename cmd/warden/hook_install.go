package main

// This file is `warden hook claude-code install`: the hook entries it writes into
// Claude Code's settings, and the checks that the binary they name will run.

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/wardenhq/warden/hook"
	"github.com/wardenhq/warden/policy"
	_ "github.com/wardenhq/warden/store/postgres" // the postgres:// and postgresql:// DSN schemes
	// the sqlite:// DSN scheme
)

// hookInstallOptions are the flags of `warden hook claude-code install`.
type hookInstallOptions struct {
	settings        string
	policy          string
	store           string
	warden          string
	write           bool
	policyInProject bool
}

func newHookInstallCommand(stdout, stderr io.Writer) *cobra.Command {
	var o hookInstallOptions
	cmd := &cobra.Command{
		Use:   "install [--settings PATH] [--policy FILE] [--store DSN] [--warden PATH] [--policy-in-project] [--write]",
		Short: "Print, or add to .claude/settings.json, the hook that runs Warden",
		Long: `Install prints the Claude Code settings block that runs Warden as a PreToolUse hook
for every tool, with the policy's absolute path. With --write it merges the block into
the settings file instead (default .claude/settings.json in the current directory):
every key and hook already there is kept, running it twice adds nothing, and a file
that is not valid JSON is refused and left untouched. The file is replaced atomically
and keeps its permissions.

The policy must load: a hook whose policy does not load denies every call. With --write,
a policy inside the project (the directory holding the settings' .claude) is refused
unless --policy-in-project is given: programs the agent runs could rewrite it.

The warden executable must last: one inside the Go build cache, a go-build directory
(go run, go test) or a temporary directory is refused; go install it first. The
PreToolUse command ends in '|| { ...; exit 2; }', so a hook whose binary is missing or
fails blocks the call (Claude Code blocks only on exit 2) and says why on stderr.

With --store, the hook records every decision in that audit log, and a PostToolUse
hook is added that records the calls that ran.`,
		Example: `  warden hook claude-code install --policy warden.yaml
  warden hook claude-code install --policy warden.yaml --write
  warden hook claude-code install --policy warden.yaml --store sqlite:///home/me/warden.db --write`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return execute(cmd.Context(), newHookInstallProgram(o, stdout, stderr), nil)
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.settings, "settings", filepath.Join(".claude", "settings.json"), "Claude Code settings file to merge into")
	f.StringVar(&o.policy, "policy", "warden.yaml", "policy file the hook uses")
	f.StringVar(&o.store, "store", "", "also record decisions in this store's audit log")
	f.StringVar(&o.warden, "warden", "", "warden executable the hook runs (default: warden on PATH, else this executable)")
	f.BoolVar(&o.write, "write", false, "merge into the settings file instead of printing")
	f.BoolVar(&o.policyInProject, policyInProjectFlag, false, "accept a policy file inside the project directory, where programs the agent runs could rewrite it")
	return cmd
}

// hookInstallProgram is one `warden hook claude-code install`.
type hookInstallProgram struct {
	noResources
	o              hookInstallOptions
	stdout, stderr io.Writer
}

// newHookInstallProgram builds the install; Run checks the policy and the executable,
// which needs the filesystem.
func newHookInstallProgram(o hookInstallOptions, stdout, stderr io.Writer) *hookInstallProgram {
	return &hookInstallProgram{o: o, stdout: stdout, stderr: stderr}
}

// Run prints or writes the hooks block.
func (p *hookInstallProgram) Run(context.Context) error {
	o, stdout, stderr := p.o, p.stdout, p.stderr
	policyPath, err := filepath.Abs(o.policy)
	if err != nil {
		return usageErrorf("--policy: %v", err)
	}
	if _, err := policy.LoadFile(policyPath, nil); err != nil {
		return configError(fmt.Errorf("not installing a hook whose policy does not load (it would deny every call):\n%w", err))
	}
	if !o.policyInProject {
		dirs := installProjectDirs(o.settings)
		if !o.write {
			// Printed, the block may go anywhere: warn about the usual place.
			if wd, err := os.Getwd(); err == nil && hook.Inside(policyPath, wd) {
				fmt.Fprintf(stderr, "warning: if this block goes into this directory's settings, the hook will refuse every call: %s\n", policyInProjectProblem(policyPath, wd))
			}
			dirs = nil
		}
		for _, dir := range dirs {
			if hook.Inside(policyPath, dir) {
				return usageErrorf("%s", policyInProjectProblem(policyPath, dir))
			}
		}
	}
	exe := o.warden
	if exe == "" {
		if exe, err = wardenExecutable(); err != nil {
			return internalError(err)
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return usageErrorf("--warden: %v", err)
	}
	if err := checkHookExecutable(exe); err != nil {
		return usageErrorf("%v", err)
	}
	hooks := claudeHooks(exe, policyPath, o.store, o.policyInProject)
	if !o.write {
		_, err := stdout.Write(hook.ClaudeHooksBlock(hooks...))
		return err
	}
	changed, err := hook.InstallClaudeSettings(o.settings, hooks...)
	switch {
	case errors.Is(err, hook.ErrInvalidSettings):
		return configError(fmt.Errorf("%w (nothing was written; fix or move the file and run again)", err))
	case err != nil:
		return internalError(fmt.Errorf("%s: %w", o.settings, err))
	case changed:
		fmt.Fprintf(stdout, "added the Warden hook to %s\n", o.settings)
	default:
		fmt.Fprintf(stdout, "%s already runs the Warden hook; nothing changed\n", o.settings)
	}
	return nil
}

// claudeHooks are the hooks install adds: PreToolUse always, PostToolUse with a store.
func claudeHooks(exe, policyPath, dsn string, policyInProject bool) []hook.ClaudeHook {
	pre := []string{exe, "hook", "claude-code", "--policy", policyPath}
	if policyInProject {
		pre = append(pre, "--"+policyInProjectFlag)
	}
	if dsn == "" {
		return []hook.ClaudeHook{{Event: hook.EventPreToolUse, Command: blockingCommand(pre)}}
	}
	pre = append(pre, "--store", dsn)
	post := []string{exe, "hook", "claude-code", "--event", "post", "--store", dsn}
	return []hook.ClaudeHook{
		{Event: hook.EventPreToolUse, Command: blockingCommand(pre)},
		{Event: hook.EventPostToolUse, Command: shellJoin(post)},
	}
}

// blockingCommand is the PreToolUse hook command line for argv: Claude Code runs it
// through a shell and blocks the call only on exit 2, so any other failure (the binary
// removed or not executable, 126 and 127; killed by a signal; a crash, 1) is turned into
// exit 2 with a message on stderr, which Claude Code shows. Warden's own exit 2 passes
// through with its own message.
func blockingCommand(argv []string) string {
	return shellJoin(argv) + ` || { s=$?; [ "$s" -eq 2 ] || echo "Warden's PreToolUse hook failed (exit $s), so this tool call is blocked. Check that the warden binary named in the hook exists and runs, or reinstall the hook (go install github.com/wardenhq/warden/cmd/warden@latest, then warden hook claude-code install --write)." >&2; exit 2; }`
}

// wardenExecutable is the program the hook runs: warden as found on PATH (a path that
// survives upgrades), else the running executable. An absolute path, because a hook
// command that is not found is a non-blocking error for Claude Code: the tool would run
// ungoverned.
func wardenExecutable() (string, error) {
	if p, err := exec.LookPath("warden"); err == nil {
		return filepath.Abs(p)
	}
	p, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("cannot find the warden executable (use --warden PATH): %w", err)
	}
	return p, nil
}

// installProjectDirs are the directories install treats as the project: the one whose
// .claude directory holds the settings file, unless that is the home directory (the
// user's own settings, for every project; the hook checks each project when it runs).
func installProjectDirs(settings string) []string {
	abs, err := filepath.Abs(settings)
	if err != nil {
		return nil
	}
	d := filepath.Dir(abs)
	if filepath.Base(d) != ".claude" {
		return nil
	}
	project := filepath.Dir(d)
	if home, err := os.UserHomeDir(); err == nil && hook.Inside(home, project) {
		return nil
	}
	return []string{project}
}

// checkHookExecutable refuses a warden executable that will not be there when the hook
// runs: one inside the Go build cache, a go-build work directory (where `go run` and `go
// test` put their binaries) or a temporary directory, all of which are cleaned. exe is
// absolute.
func checkHookExecutable(exe string) error {
	type place struct{ dir, what string }
	var places []place
	if out, err := exec.Command("go", "env", "GOCACHE", "GOTMPDIR").Output(); err == nil {
		lines := strings.Split(strings.TrimSpace(string(out)), "\n")
		if len(lines) > 0 && filepath.IsAbs(lines[0]) {
			places = append(places, place{lines[0], "the Go build cache"})
		}
		if len(lines) > 1 && filepath.IsAbs(lines[1]) {
			places = append(places, place{lines[1], "Go's temporary directory (GOTMPDIR)"})
		}
	}
	for _, env := range []string{"GOCACHE", "GOTMPDIR"} {
		if d := os.Getenv(env); filepath.IsAbs(d) {
			places = append(places, place{d, "$" + env})
		}
	}
	if d, err := os.UserCacheDir(); err == nil {
		places = append(places, place{filepath.Join(d, "go-build"), "the Go build cache"})
	}
	places = append(places, place{os.TempDir(), "the temporary directory " + os.TempDir()})
	for _, d := range []string{"/tmp", "/var/tmp", "/dev/shm"} {
		places = append(places, place{d, "the temporary directory " + d})
	}
	fix := "Build warden to a lasting place and install with it: `go install github.com/wardenhq/warden/cmd/warden@latest` (then run `warden hook claude-code install` from PATH), or `go build -o ~/bin/warden ./cmd/warden` and pass --warden ~/bin/warden"
	for _, seg := range strings.Split(filepath.ToSlash(exe), "/") {
		if strings.HasPrefix(seg, "go-build") {
			return fmt.Errorf("not installing a hook that runs %s: it is a binary `go run` or `go test` built in a go-build work directory, which is deleted, and a hook whose binary is gone blocks every call.\n%s", exe, fix)
		}
	}
	for _, p := range places {
		if hook.Inside(exe, p.dir) {
			return fmt.Errorf("not installing a hook that runs %s: it is inside %s, which is cleaned, and a hook whose binary is gone blocks every call.\n%s", exe, p.what, fix)
		}
	}
	return nil
}

// shellJoin quotes words for the shell that runs a hook command.
func shellJoin(words []string) string {
	q := make([]string, len(words))
	for i, w := range words {
		if w != "" && strings.Trim(w, "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-_./:=@+,%") == "" {
			q[i] = w
			continue
		}
		q[i] = "'" + strings.ReplaceAll(w, "'", `'\''`) + "'"
	}
	return strings.Join(q, " ")
}
