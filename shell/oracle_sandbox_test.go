package shell

// The sandbox of the execution oracle (see TestOracle in oracle_test.go).
//
// Every command runs in a throwaway process tree that cannot change
// anything outside a fresh tmpfs:
//
//   - The test binary re-executes itself as a helper (oracleHelperEnv set,
//     caught in init below) in new mount, PID and network namespaces. The
//     network namespace has only a loopback interface, and it is down.
//   - The helper (real root in its namespaces) bind-mounts / read-only,
//     nosuid and nodev on a private mount point, puts a tmpfs /dev holding
//     only null, zero, full, random and urandom (bound from the host) and a
//     private devpts instance, mounts a proc for its PID namespace, a
//     root-only tmpfs for the traces and pivots into that root, so no
//     submount of the host (/dev, /proc, /sys, /run, ...) is reachable.
//   - For each command it mounts a fresh tmpfs on the box directory, fills
//     it with the hostile template and starts strace (as real root, out of
//     the command's reach) on prlimit (limits the command cannot raise),
//     then on the test binary again as a launcher (oracleLaunchEnv), which
//     starts bash -c COMMAND in a new user namespace, where root is uid and
//     gid 65534 outside (the maps are written from outside, so setgroups
//     works and su or runuser can run), and a new mount namespace (so every
//     inherited mount is locked read-only). The command is root in its own user
//     namespace only: it can chroot, unshare and mount inside it, but it
//     cannot remount / writable, write where uid 65534 may not, signal the
//     helper or strace, reboot, or reach the trace file.
//   - After the command, or when its time is up, every process of uid
//     65534 is killed; the helper is PID 1, so when it exits the kernel
//     kills whatever is left.
//
// TestOracleSandbox checks these properties from inside.
//
// The namespaces are made with the kernel's own calls from Go rather than
// with bubblewrap: nothing to install beyond strace and util-linux, and
// the user namespace's maps are written from outside (by the launcher, as
// real root), which bubblewrap's unprivileged mode cannot do, so su and
// runuser (which call setgroups) really run.

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
	"unsafe"
)

const (
	// oracleHelperEnv makes the test binary act as the sandbox helper; its
	// value is the host directory holding root/, box/, out/ and template/.
	oracleHelperEnv = "WARDEN_SHELL_ORACLE_HELPER"
	// oracleUID is the uid and gid that commands run as, seen from outside
	// their user namespace.
	oracleUID = 65534
	// oracleTimeout is how long a command may run before it is killed.
	oracleTimeout = 4 * time.Second
	// oraclePath is the PATH commands run with.
	oraclePath = "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
)

// oracleTools are the programs the sandbox needs, looked up in oraclePath.
var oracleTools = []string{"bash", "strace", "prlimit"}

// oracleLaunchEnv makes the test binary act as the launcher: it runs its
// arguments as uid and gid 0 of a new user namespace, mapped to oracleUID
// outside, in a new mount namespace, and exits with their status.
const oracleLaunchEnv = "WARDEN_SHELL_ORACLE_LAUNCH"

func init() {
	if os.Getenv(oracleLaunchEnv) == "1" {
		os.Exit(oracleLaunchMain(os.Args[1:]))
	}
	if base := os.Getenv(oracleHelperEnv); base != "" {
		os.Exit(oracleHelperMain(base))
	}
}

// oracleLaunchMain is the launcher (see oracleLaunchEnv).
func oracleLaunchMain(argv []string) int {
	if len(argv) == 0 {
		fmt.Fprintln(os.Stderr, "oracle launcher: no command")
		return 126
	}
	cmd := exec.Command(argv[0], argv[1:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	env := os.Environ()
	cmd.Env = env[:0:0]
	for _, kv := range env {
		if !strings.HasPrefix(kv, oracleLaunchEnv+"=") && !strings.HasPrefix(kv, "GORACE=") {
			cmd.Env = append(cmd.Env, kv)
		}
	}
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags:                 syscall.CLONE_NEWUSER | syscall.CLONE_NEWNS,
		UidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: oracleUID, Size: 1}},
		GidMappings:                []syscall.SysProcIDMap{{ContainerID: 0, HostID: oracleUID, Size: 1}},
		GidMappingsEnableSetgroups: true,
		// Become root of the new namespace, which is oracleUID outside:
		// until then the child would still be the real root.
		Credential: &syscall.Credential{Uid: 0, Gid: 0},
		Pdeathsig:  syscall.SIGKILL,
	}
	err := cmd.Run()
	if ee, ok := err.(*exec.ExitError); ok {
		return ee.ExitCode()
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "oracle launcher:", err)
		return 126
	}
	return 0
}

// oracleRequest is one command for the helper.
type oracleRequest struct {
	ID  int
	Cmd string
	Box string // the box template: "" for the hostile one, "pair" for one holding only 1 and rm
}

// oracleResponse is what the helper saw of one command.
type oracleResponse struct {
	ID       int
	Trace    string // strace output
	Stderr   string // the command's standard error, cut short
	TimedOut bool   // the command was killed after oracleTimeout
	Err      string // the helper could not run or trace the command
}

// oracleHelperMain runs the helper: it builds the sandbox root once, then
// answers one JSON request per line on standard input with one JSON
// response per line on standard output. Any setup failure is reported on
// standard error with a non-zero status.
func oracleHelperMain(base string) int {
	if err := oracleEnterRoot(base); err != nil {
		fmt.Fprintln(os.Stderr, "oracle sandbox setup:", err)
		return 3
	}
	tools := map[string]string{}
	for _, name := range oracleTools {
		p, err := oracleLookPath(name)
		if err != nil {
			fmt.Fprintln(os.Stderr, "oracle sandbox setup:", err)
			return 3
		}
		tools[name] = p
	}
	launcher, err := os.Executable()
	if err != nil {
		fmt.Fprintln(os.Stderr, "oracle sandbox setup:", err)
		return 3
	}
	tools["launcher"] = launcher
	in := bufio.NewScanner(os.Stdin)
	in.Buffer(make([]byte, 1<<20), 4<<20)
	out := json.NewEncoder(os.Stdout)
	fmt.Println("ready")
	for in.Scan() {
		var req oracleRequest
		if err := json.Unmarshal(in.Bytes(), &req); err != nil {
			fmt.Fprintln(os.Stderr, "oracle helper: bad request:", err)
			return 3
		}
		resp := oracleRunOne(base, tools, req)
		if err := out.Encode(resp); err != nil {
			return 3
		}
	}
	return 0
}

// oracleLookPath finds a program in oraclePath.
func oracleLookPath(name string) (string, error) {
	for _, dir := range filepath.SplitList(oraclePath) {
		p := filepath.Join(dir, name)
		if st, err := os.Stat(p); err == nil && st.Mode().IsRegular() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s not found in %s", name, oraclePath)
}

// oracleEnterRoot builds the read-only root and pivots into it. The helper
// runs in its own mount namespace, so nothing here is seen by the host.
func oracleEnterRoot(base string) error {
	root := filepath.Join(base, "root")
	steps := []struct {
		what string
		fn   func() error
	}{
		{"make mounts private", func() error { return syscall.Mount("", "/", "", syscall.MS_REC|syscall.MS_PRIVATE, "") }},
		{"bind /", func() error { return syscall.Mount("/", root, "", syscall.MS_BIND, "") }},
		{"remount / read-only", func() error {
			return syscall.Mount("", root, "", syscall.MS_REMOUNT|syscall.MS_BIND|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NODEV, "")
		}},
		{"tmpfs /dev", func() error {
			return syscall.Mount("tmpfs", filepath.Join(root, "dev"), "tmpfs", syscall.MS_NOSUID|syscall.MS_NOEXEC, "mode=0755,size=1m")
		}},
		{"device nodes", func() error {
			for _, d := range []string{"null", "zero", "full", "random", "urandom"} {
				p := filepath.Join(root, "dev", d)
				if err := os.WriteFile(p, nil, 0o666); err != nil {
					return err
				}
				if err := syscall.Mount("/dev/"+d, p, "", syscall.MS_BIND, ""); err != nil {
					return fmt.Errorf("%s: %w", d, err)
				}
			}
			for _, l := range [][2]string{{"/proc/self/fd", "fd"}, {"/proc/self/fd/0", "stdin"}, {"/proc/self/fd/1", "stdout"}, {"/proc/self/fd/2", "stderr"}, {"pts/ptmx", "ptmx"}} {
				if err := os.Symlink(l[0], filepath.Join(root, "dev", l[1])); err != nil {
					return err
				}
			}
			if err := os.Mkdir(filepath.Join(root, "dev", "pts"), 0o755); err != nil {
				return err
			}
			// A private devpts instance, for programs such as script that
			// need a terminal; it holds no terminal of the host.
			return syscall.Mount("devpts", filepath.Join(root, "dev", "pts"), "devpts", syscall.MS_NOSUID|syscall.MS_NOEXEC, "newinstance,ptmxmode=0666,mode=0620")
		}},
		{"remount /dev read-only", func() error {
			return syscall.Mount("", filepath.Join(root, "dev"), "", syscall.MS_REMOUNT|syscall.MS_RDONLY|syscall.MS_NOSUID|syscall.MS_NOEXEC, "mode=0755,size=1m")
		}},
		{"proc", func() error {
			return syscall.Mount("proc", filepath.Join(root, "proc"), "proc", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "")
		}},
		{"trace tmpfs", func() error {
			return syscall.Mount("tmpfs", filepath.Join(root, base, "out"), "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV|syscall.MS_NOEXEC, "mode=0700,size=128m")
		}},
		{"pivot_root", func() error {
			if err := syscall.Chdir(root); err != nil {
				return err
			}
			if err := syscall.PivotRoot(".", "."); err != nil {
				return err
			}
			if err := syscall.Unmount(".", syscall.MNT_DETACH); err != nil {
				return err
			}
			return syscall.Chdir("/")
		}},
	}
	for _, s := range steps {
		if err := s.fn(); err != nil {
			return fmt.Errorf("%s: %w", s.what, err)
		}
	}
	return nil
}

// oracleRunOne runs one command in a fresh box and returns its trace.
func oracleRunOne(base string, tools map[string]string, req oracleRequest) (resp oracleResponse) {
	resp.ID = req.ID
	box := filepath.Join(base, "box")
	out := filepath.Join(base, "out")
	if err := syscall.Mount("tmpfs", box, "tmpfs", syscall.MS_NOSUID|syscall.MS_NODEV,
		fmt.Sprintf("uid=%d,gid=%d,mode=0755,size=32m,nr_inodes=20000", oracleUID, oracleUID)); err != nil {
		resp.Err = "mount box: " + err.Error()
		return resp
	}
	defer func() {
		oracleKillAll()
		if err := syscall.Unmount(box, syscall.MNT_DETACH); err != nil && resp.Err == "" {
			resp.Err = "unmount box: " + err.Error()
		}
	}()
	template := filepath.Join(base, "template")
	switch req.Box {
	case "":
	case "pair":
		template = filepath.Join(base, "template-pair")
	default:
		resp.Err = "unknown box " + strconv.Quote(req.Box)
		return resp
	}
	if err := oracleCopyTree(template, box); err != nil {
		resp.Err = "fill box: " + err.Error()
		return resp
	}
	tracePath := filepath.Join(out, "trace")
	stderrPath := filepath.Join(out, "stderr")
	os.Remove(tracePath)
	errFile, err := os.OpenFile(stderrPath, os.O_RDWR|os.O_CREATE|os.O_TRUNC, 0o600)
	if err != nil {
		resp.Err = err.Error()
		return resp
	}
	defer errFile.Close()
	devnull, err := os.Open(os.DevNull)
	if err != nil {
		resp.Err = err.Error()
		return resp
	}
	defer devnull.Close()

	cmd := exec.Command(tools["strace"],
		"-f", "--seccomp-bpf", "-qq", "-e", "signal=none", "-e", "trace=execve,execveat,clone,clone3,fork,vfork",
		"-xx", "-s", "1048576", "-o", tracePath, "--",
		// Limits that the command cannot raise: address space per process,
		// processes per user (a fork bomb), no core files.
		tools["prlimit"], "--as=4294967296", "--nproc=1024", "--core=0", "--",
		tools["launcher"], tools["bash"], "-c", req.Cmd)
	cmd.Dir = box
	cmd.Env = []string{
		oracleLaunchEnv + "=1", // read by the launcher, not passed on
		// A race-enabled launcher would otherwise wait a second at exit.
		"GORACE=atexit_sleep_ms=0",
		"PATH=" + oraclePath, "HOME=" + box, "LANG=C.UTF-8", "TERM=dumb",
		"SHELL=/bin/sh", "USER=root", "LOGNAME=root", "TMPDIR=" + box,
	}
	cmd.Stdin = devnull
	// The command's standard output is thrown away; its standard error is
	// kept (a file in the trace tmpfs, which the command reaches only
	// through this descriptor) to explain failures.
	cmd.Stdout = nil
	cmd.Stderr = errFile
	cmd.SysProcAttr = &syscall.SysProcAttr{Setsid: true}
	if err := cmd.Start(); err != nil {
		resp.Err = "start strace: " + err.Error()
		return resp
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	timer := time.NewTimer(oracleTimeout)
	defer timer.Stop()
	select {
	case <-done:
	case <-timer.C:
		resp.TimedOut = true
		// Killing the traced processes lets strace finish its trace.
		oracleKillAll()
		select {
		case <-done:
		case <-time.After(10 * time.Second):
			cmd.Process.Kill()
			<-done
			resp.Err = "strace did not finish after its processes were killed"
		}
	}
	trace, err := os.ReadFile(tracePath)
	if err != nil {
		resp.Err = "read trace: " + err.Error()
		return resp
	}
	resp.Trace = string(trace)
	var eb [4096]byte
	n, _ := errFile.ReadAt(eb[:], 0)
	resp.Stderr = string(eb[:n])
	return resp
}

// oracleKillAll kills every process of oracleUID in the helper's PID
// namespace and waits until each is gone (through a pidfd, which becomes
// readable when its process exits), until none is left.
func oracleKillAll() {
	for range 100 {
		pids := oraclePidsOf(oracleUID)
		if len(pids) == 0 {
			return
		}
		for _, pid := range pids {
			syscall.Kill(pid, syscall.SIGKILL)
		}
		for _, pid := range pids {
			oracleWaitGone(pid)
		}
		// Reap what the helper, as PID 1, inherited.
		for {
			var ws syscall.WaitStatus
			pid, err := syscall.Wait4(-1, &ws, syscall.WNOHANG, nil)
			if pid <= 0 || err != nil {
				break
			}
		}
	}
}

// oracleWaitGone waits, at most a second, for process pid to exit.
func oracleWaitGone(pid int) {
	const sysPidfdOpen = 434
	fd, _, errno := syscall.Syscall(sysPidfdOpen, uintptr(pid), 0, 0)
	if errno != 0 {
		return // already gone (ESRCH)
	}
	defer syscall.Close(int(fd))
	fds := []struct {
		fd      int32
		events  int16
		revents int16
	}{{int32(fd), 1 /* POLLIN */, 0}}
	syscall.Syscall(syscall.SYS_POLL, uintptr(unsafe.Pointer(&fds[0])), 1, 1000)
}

// oraclePidsOf lists the live processes whose real uid is uid.
func oraclePidsOf(uid int) []int {
	entries, err := os.ReadDir("/proc")
	if err != nil {
		return nil
	}
	var pids []int
	want := fmt.Sprintf("Uid:\t%d\t", uid)
	for _, e := range entries {
		pid, err := strconv.Atoi(e.Name())
		if err != nil {
			continue
		}
		status, err := os.ReadFile(filepath.Join("/proc", e.Name(), "status"))
		if err != nil || bytes.Contains(status, []byte("State:\tZ")) {
			continue
		}
		if bytes.Contains(status, []byte(want)) {
			pids = append(pids, pid)
		}
	}
	return pids
}

// oracleCopyTree copies the template into the box, owned by oracleUID.
func oracleCopyTree(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		target := filepath.Join(dst, rel)
		info, err := d.Info()
		if err != nil {
			return err
		}
		switch {
		case rel == ".":
			return nil
		case d.Type()&fs.ModeSymlink != 0:
			link, err := os.Readlink(p)
			if err != nil {
				return err
			}
			if err := os.Symlink(link, target); err != nil {
				return err
			}
		case d.IsDir():
			if err := os.Mkdir(target, info.Mode().Perm()); err != nil {
				return err
			}
		case info.Mode().IsRegular():
			data, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			if err := os.WriteFile(target, data, info.Mode().Perm()); err != nil {
				return err
			}
			if err := os.Chmod(target, info.Mode().Perm()); err != nil {
				return err
			}
		default:
			return fmt.Errorf("unexpected file type in template: %s", rel)
		}
		return os.Lchown(target, oracleUID, oracleUID)
	})
}

// oracleHostileNames are the names seeded at the top of every box: names a
// glob can turn into options or commands, names that are shell syntax, and
// names with blanks and a newline. Each maps to its content; executables
// (mode 0755) hold only a no-op, so running one shows up as exactly one
// exec.
var oracleHostileNames = map[string]string{
	"-exec": "", "-execdir": "", "-delete": "", "-ok": "", "-rf": "", "-i": "", "--help": "",
	"-c": "", "-e": "", "-x": "", "1": "", "*": "", "?": "", "[": "", ";": "", "&&": "", "|": "",
	"$(touch pwned-name)": "", "`touch pwned-bq`": "", "${x}": "", "a b": "", "a\tb": "", "new\nline": "", " lead": "",
	"é": "", "\xff": "", "{}": "", "~": "", "-": "",
	"tracked.txt": "b\n",
	"args.txt":    "touch pwned-args\n",
	"paths.txt":   "./1\n",
	"script.sh":   "touch pwned-script\n",
	"lockf":       "",
	"x":           "",
}

// oracleExecutables are hostile names that are also executable no-op
// scripts: a glob or a found file that runs one is visible in the trace.
var oracleExecutables = []string{"rm", "ls", "pre-commit", "sub/rm", "sub/pre-commit", "sh", "-exec-me"}

// oracleBuildTemplate writes the box template under dir: the hostile names,
// a subdirectory, symlinks out of the box, and a git repository with one
// commit and one modified tracked file (so diff, status and commit have
// work to do).
func oracleBuildTemplate(dir string) error {
	if err := os.MkdirAll(filepath.Join(dir, "sub", "deeper"), 0o755); err != nil {
		return err
	}
	for name, content := range oracleHostileNames {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(content), 0o644); err != nil {
			return err
		}
	}
	for _, name := range []string{"sub/-exec", "sub/a b", "sub/deeper/f"} {
		if err := os.WriteFile(filepath.Join(dir, name), nil, 0o644); err != nil {
			return err
		}
	}
	for _, name := range oracleExecutables {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n:\n"), 0o755); err != nil {
			return err
		}
	}
	for _, l := range [][2]string{{"/etc", "link"}, {"/", "rootlink"}, {"sub", "sublink"}, {"missing", "dangling"}} {
		if err := os.Symlink(l[0], filepath.Join(dir, l[1])); err != nil {
			return err
		}
	}
	git, err := exec.LookPath("git")
	if err != nil {
		return nil // no git: the git tricks simply run nothing
	}
	env := []string{"PATH=" + oraclePath, "HOME=" + dir, "GIT_CONFIG_NOSYSTEM=1", "LANG=C"}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"config", "user.name", "Oracle"},
		{"config", "user.email", "oracle@example.invalid"},
		{"add", "tracked.txt"},
		{"commit", "-q", "-m", "one"},
	} {
		c := exec.Command(git, args...)
		c.Dir = dir
		c.Env = env
		if out, err := c.CombinedOutput(); err != nil {
			return fmt.Errorf("git %s: %v: %s", strings.Join(args, " "), err, out)
		}
	}
	if err := os.WriteFile(filepath.Join(dir, "tracked.txt"), []byte("c\n"), 0o644); err != nil {
		return err
	}
	// The sample hooks only cost copying time; no hook is active.
	return os.RemoveAll(filepath.Join(dir, ".git", "hooks"))
}

// oracleBuildPairTemplate writes the second box: only the files 1 and rm
// (an executable no-op) and an empty subdirectory, so that "*" expands to
// exactly "1 rm sub" (timeout * ls runs rm).
func oracleBuildPairTemplate(dir string) error {
	if err := os.Mkdir(filepath.Join(dir, "sub"), 0o755); err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "1"), nil, 0o644); err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, "rm"), []byte("#!/bin/sh\n:\n"), 0o755)
}

// oracleSandbox is a pool of helper processes.
type oracleSandbox struct {
	base    string
	workers chan *oracleWorker
	mu      sync.Mutex
	nextID  int
}

// oracleWorker is one running helper.
type oracleWorker struct {
	cmd *exec.Cmd
	in  io.WriteCloser
	out *bufio.Reader
}

var (
	oracleShared     *oracleSandbox
	oracleSharedErr  error
	oracleSharedOnce sync.Once
)

// oracleSandboxOrSkip returns the shared sandbox, starting it on first use.
// When the sandbox cannot be made (not root, no strace, no user namespaces,
// ...) the test is skipped, except under CI=true, where it fails.
func oracleSandboxOrSkip(t testing.TB) *oracleSandbox {
	t.Helper()
	oracleSharedOnce.Do(func() {
		oracleShared, oracleSharedErr = newOracleSandbox(oracleWorkers())
	})
	if oracleSharedErr != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("execution oracle sandbox unavailable (CI=true, so this fails): %v", oracleSharedErr)
		}
		t.Skipf("execution oracle sandbox unavailable: %v", oracleSharedErr)
	}
	return oracleShared
}

// oracleWorkers is how many helpers run at once: WARDEN_SHELL_ORACLE_PROCS,
// or 2.
func oracleWorkers() int {
	if n, err := strconv.Atoi(os.Getenv("WARDEN_SHELL_ORACLE_PROCS")); err == nil && n > 0 {
		return n
	}
	return 2
}

// newOracleSandbox prepares the host directories and starts n helpers.
// The directories are left in the system temp dir for the life of the
// process; they hold only empty mount points and the small template.
func newOracleSandbox(n int) (*oracleSandbox, error) {
	if os.Geteuid() != 0 {
		return nil, errors.New("needs root (mount and PID namespaces)")
	}
	for _, name := range oracleTools {
		if _, err := oracleLookPath(name); err != nil {
			return nil, fmt.Errorf("%v (Debian: apt-get install -y strace util-linux bash)", err)
		}
	}
	base, err := os.MkdirTemp("", "warden-oracle-")
	if err != nil {
		return nil, err
	}
	// The commands (uid 65534) must reach their box by its full path.
	if err := os.Chmod(base, 0o755); err != nil {
		return nil, err
	}
	for _, d := range []string{"root", "box", "out", "template", "template-pair"} {
		if err := os.Mkdir(filepath.Join(base, d), 0o755); err != nil {
			return nil, err
		}
	}
	if err := oracleBuildTemplate(filepath.Join(base, "template")); err != nil {
		return nil, fmt.Errorf("box template: %w", err)
	}
	if err := oracleBuildPairTemplate(filepath.Join(base, "template-pair")); err != nil {
		return nil, fmt.Errorf("box template: %w", err)
	}
	s := &oracleSandbox{base: base, workers: make(chan *oracleWorker, n)}
	oracleHomeDir = filepath.Join(base, "box")
	for range n {
		w, err := s.startWorker()
		if err != nil {
			return nil, err
		}
		s.workers <- w
	}
	// A first command proves that strace, the launcher and the user namespace
	// work here.
	r, err := s.Run("true")
	if err != nil {
		return nil, err
	}
	if _, err := parseOracleTrace(r.Trace, "true"); err != nil {
		return nil, fmt.Errorf("sandbox probe: %v (stderr %q)", err, r.Stderr)
	}
	return s, nil
}

// startWorker starts one helper in new mount, PID and network namespaces
// and waits for it to report that its root is built.
func (s *oracleSandbox) startWorker() (*oracleWorker, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-test.run=^$")
	cmd.Env = append(os.Environ(), oracleHelperEnv+"="+s.base)
	cmd.SysProcAttr = &syscall.SysProcAttr{
		Cloneflags: syscall.CLONE_NEWNS | syscall.CLONE_NEWPID | syscall.CLONE_NEWNET,
		Pdeathsig:  syscall.SIGKILL,
	}
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	outPipe, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, fmt.Errorf("start sandbox helper: %w", err)
	}
	out := bufio.NewReaderSize(outPipe, 1<<20)
	line, err := out.ReadString('\n')
	if err != nil || line != "ready\n" {
		cmd.Process.Kill()
		cmd.Wait()
		return nil, fmt.Errorf("sandbox helper did not start: %q %v: %s", line, err, strings.TrimSpace(stderr.String()))
	}
	return &oracleWorker{cmd: cmd, in: in, out: out}, nil
}

// Run runs one command in the hostile box of the sandbox. An error means
// the sandbox failed (not the command); the worker is then replaced.
func (s *oracleSandbox) Run(command string) (oracleResponse, error) {
	return s.RunIn("", command)
}

// RunIn runs one command in the named box (see oracleRequest).
func (s *oracleSandbox) RunIn(box, command string) (oracleResponse, error) {
	s.mu.Lock()
	s.nextID++
	id := s.nextID
	s.mu.Unlock()
	w := <-s.workers
	resp, err := w.run(oracleRequest{ID: id, Cmd: command, Box: box})
	if err != nil {
		w.cmd.Process.Kill()
		w.cmd.Wait()
		nw, serr := s.startWorker()
		if serr != nil {
			// Keep the pool size; a dead worker fails every later call.
			s.workers <- w
			return resp, fmt.Errorf("%v; restarting the helper: %v", err, serr)
		}
		s.workers <- nw
		return resp, err
	}
	s.workers <- w
	if resp.Err != "" {
		return resp, fmt.Errorf("sandbox: %s", resp.Err)
	}
	return resp, nil
}

// run sends one request and waits for its answer, at most a generous
// multiple of the command timeout.
func (w *oracleWorker) run(req oracleRequest) (oracleResponse, error) {
	var resp oracleResponse
	data, err := json.Marshal(req)
	if err != nil {
		return resp, err
	}
	if _, err := w.in.Write(append(data, '\n')); err != nil {
		return resp, fmt.Errorf("sandbox helper: %w", err)
	}
	type result struct {
		line []byte
		err  error
	}
	ch := make(chan result, 1)
	go func() {
		line, err := w.out.ReadBytes('\n')
		ch <- result{line, err}
	}()
	select {
	case r := <-ch:
		if r.err != nil {
			return resp, fmt.Errorf("sandbox helper died: %w", r.err)
		}
		if err := json.Unmarshal(r.line, &resp); err != nil {
			return resp, fmt.Errorf("sandbox helper answer: %w", err)
		}
		if resp.ID != req.ID {
			return resp, fmt.Errorf("sandbox helper answered %d for %d", resp.ID, req.ID)
		}
		return resp, nil
	case <-time.After(4*oracleTimeout + 20*time.Second):
		w.cmd.Process.Kill()
		<-ch
		return resp, errors.New("sandbox helper hung")
	}
}
