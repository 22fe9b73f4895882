package cli

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
)

// HookBinary is the name of the slim hook executable install makes the settings run
// (cmd/warden-hook): it links only what the hook needs, so it starts in a few
// milliseconds where the whole warden binary takes several times that.
const HookBinary = "warden-hook"

// installOptions are the flags of `warden hook claude-code install`.
type installOptions struct {
	settings        string
	policy          string
	store           string
	hookBinary      string
	warden          string // the removed --warden flag, refused with a pointer to --warden-hook
	write           bool
	policyInProject bool
}

func newInstallCommand(stdout, stderr io.Writer) *cobra.Command {
	var o installOptions
	cmd := &cobra.Command{
		Use:   "install [--settings PATH] [--policy FILE] [--store DSN] [--warden-hook PATH] [--policy-in-project] [--write]",
		Short: "Print, or add to .claude/settings.json, the hook that runs Warden",
		Long: `Install prints the Claude Code settings block that runs Warden as a PreToolUse hook
for every tool, with the policy's absolute path. With --write it merges the block into
the settings file instead (default .claude/settings.json in the current directory):
every key and hook already there is kept, running it twice adds nothing, and a file
that is not valid JSON is refused and left untouched. The file is replaced atomically
and keeps its permissions.

The hook runs warden-hook, the slim binary that does exactly what 'warden hook
claude-code' does and starts several times faster (Claude Code runs it before every
tool call). By default it is the warden-hook beside this executable (beside the warden
on PATH first, when that is a link to this executable), which must exist:
build it with 'go build -o DIR/warden-hook ./cmd/warden-hook' into the directory of
warden (or 'go install github.com/wardenhq/warden/cmd/...@latest', which installs both).
--warden-hook PATH names another one; it is written as given (made absolute), so a
block can be printed for another machine.

The policy must load: a hook whose policy does not load denies every call. With --write,
a policy inside the project (the directory holding the settings' .claude) is refused
unless --policy-in-project is given: programs the agent runs could rewrite it.

The hook executable must last: one inside the Go build cache, a go-build directory
(go run, go test) or a temporary directory is refused; install it first. The
PreToolUse command ends in '|| { ...; exit 2; }', so a hook whose binary is missing or
fails blocks the call (Claude Code blocks only on exit 2) and says why on stderr.

With --store, the hook records every decision in that audit log, and a PostToolUse
hook is added that records the calls that ran.`,
		Example: `  warden hook claude-code install --policy warden.yaml
  warden hook claude-code install --policy warden.yaml --write
  warden hook claude-code install --policy warden.yaml --store sqlite:///home/me/warden.db --write`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			return newInstallProgram(o, stdout, stderr).Run(cmd.Context())
		},
	}
	f := cmd.Flags()
	f.StringVar(&o.settings, "settings", filepath.Join(".claude", "settings.json"), "Claude Code settings file to merge into")
	f.StringVar(&o.policy, "policy", "warden.yaml", "policy file the hook uses")
	f.StringVar(&o.store, "store", "", "also record decisions in this store's audit log")
	f.StringVar(&o.hookBinary, "warden-hook", "", "warden-hook executable the hook runs (default: warden-hook beside this executable)")
	f.StringVar(&o.warden, "warden", "", "removed: use --warden-hook")
	_ = f.MarkHidden("warden")
	f.BoolVar(&o.write, "write", false, "merge into the settings file instead of printing")
	f.BoolVar(&o.policyInProject, policyInProjectFlag, false, "accept a policy file inside the project directory, where programs the agent runs could rewrite it")
	return cmd
}

// installProgram is one `warden hook claude-code install`.
type installProgram struct {
	o              installOptions
	stdout, stderr io.Writer
}

// newInstallProgram builds the install; Run checks the policy and the executable,
// which needs the filesystem.
func newInstallProgram(o installOptions, stdout, stderr io.Writer) *installProgram {
	return &installProgram{o: o, stdout: stdout, stderr: stderr}
}

// Run prints or writes the hooks block.
func (p *installProgram) Run(context.Context) error {
	o, stdout, stderr := p.o, p.stdout, p.stderr
	if o.warden != "" {
		return usageErrorf("--warden is gone: the hook now runs the slim %s binary; pass --warden-hook PATH (build it with go build -o %s ./cmd/warden-hook)", HookBinary, filepath.Join(filepath.Dir(o.warden), HookBinary))
	}
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
	exe := o.hookBinary
	if exe == "" {
		running, err := os.Executable()
		if err != nil {
			return internalError(fmt.Errorf("cannot tell where this executable is, to find %s beside it (use --warden-hook PATH): %w", HookBinary, err))
		}
		if exe, err = hookBinaryBeside(running); err != nil {
			return usageErrorf("%v", err)
		}
	}
	if exe, err = filepath.Abs(exe); err != nil {
		return usageErrorf("--warden-hook: %v", err)
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

// hookBinaryBeside is the warden-hook beside the running executable. When warden as
// found on PATH is this very program under another name (a link such as
// /usr/local/bin/warden into a versioned directory, a path that survives upgrades),
// the warden-hook beside that name comes first.
func hookBinaryBeside(running string) (string, error) {
	if p, err := exec.LookPath("warden"); err == nil {
		if p, err = filepath.Abs(p); err == nil && p != running {
			a, aerr := os.Stat(p)
			b, berr := os.Stat(running)
			if aerr == nil && berr == nil && os.SameFile(a, b) {
				if exe, err := FindHookBinary(p); err == nil {
					return exe, nil
				}
			}
		}
	}
	return FindHookBinary(running)
}

// FindHookBinary returns the warden-hook executable beside exe (the running warden:
// os.Executable), which must be a regular file with an execute bit. It fails, saying
// how to build one there, when there is none.
func FindHookBinary(exe string) (string, error) {
	p := filepath.Join(filepath.Dir(exe), HookBinary)
	fi, err := os.Stat(p)
	switch {
	case err != nil && errors.Is(err, os.ErrNotExist):
		return "", fmt.Errorf("there is no %s beside %s: the hook runs that slim binary, which starts several times faster than warden. Build it there (go build -o %s ./cmd/%s, from a checkout of github.com/wardenhq/warden), or install both (go install github.com/wardenhq/warden/cmd/...@latest), or name one with --warden-hook PATH", HookBinary, exe, p, HookBinary)
	case err != nil:
		return "", fmt.Errorf("cannot use %s (use --warden-hook PATH): %w", p, err)
	case !fi.Mode().IsRegular() || fi.Mode().Perm()&0o111 == 0:
		return "", fmt.Errorf("%s is not an executable file (%v): rebuild it (go build -o %s ./cmd/%s) or name another with --warden-hook PATH", p, fi.Mode(), p, HookBinary)
	}
	return p, nil
}

// claudeHooks are the hooks install adds: PreToolUse always, PostToolUse with a store.
func claudeHooks(exe, policyPath, dsn string, policyInProject bool) []hook.ClaudeHook {
	pre := []string{exe, "claude-code", "--policy", policyPath}
	if policyInProject {
		pre = append(pre, "--"+policyInProjectFlag)
	}
	if dsn == "" {
		return []hook.ClaudeHook{{Event: hook.EventPreToolUse, Command: BlockingCommand(pre)}}
	}
	pre = append(pre, "--store", dsn)
	post := []string{exe, "claude-code", "--event", "post", "--store", dsn}
	return []hook.ClaudeHook{
		{Event: hook.EventPreToolUse, Command: BlockingCommand(pre)},
		{Event: hook.EventPostToolUse, Command: shellJoin(post)},
	}
}

// BlockingCommand is the PreToolUse hook command line for argv: Claude Code runs it
// through a shell and blocks the call only on exit 2, so any other failure (the binary
// removed or not executable, 126 and 127; killed by a signal; a crash, 1) is turned into
// exit 2 with a message on stderr, which Claude Code shows. Warden's own exit 2 passes
// through with its own message.
func BlockingCommand(argv []string) string {
	return shellJoin(argv) + ` || { s=$?; [ "$s" -eq 2 ] || echo "Warden's PreToolUse hook failed (exit $s), so this tool call is blocked. Check that the warden-hook binary named in the hook exists and runs, or reinstall the hook (go install github.com/wardenhq/warden/cmd/...@latest, then warden hook claude-code install --write)." >&2; exit 2; }`
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

// checkHookExecutable refuses a hook executable that will not be there when the hook
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
	fix := "Build warden-hook to a lasting place and install with it: `go install github.com/wardenhq/warden/cmd/...@latest` (then run `warden hook claude-code install` from PATH; it finds warden-hook beside warden), or `go build -o ~/bin/warden-hook ./cmd/warden-hook` and pass --warden-hook ~/bin/warden-hook"
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
