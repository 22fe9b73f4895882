package upstream

import (
	"os/exec"
	"syscall"
)

// dieWithGateway makes the kernel kill an upstream server process when the gateway
// dies, even by SIGKILL, so a crashed gateway leaves no orphaned servers behind. The
// server gets a process group of its own, so that endGroup can stop every process it
// started (a launcher's real server, a forked worker) when its connection ends.
func dieWithGateway(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
	cmd.SysProcAttr.Setpgid = true
}

// endGroup kills what is left of the process group of the server started as pid (its
// own helpers) once the server itself is done. An error means the group is gone.
func endGroup(pid int) {
	if pid > 0 {
		_ = syscall.Kill(-pid, syscall.SIGKILL)
	}
}
