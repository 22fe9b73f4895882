package mcp

import (
	"os/exec"
	"syscall"
)

// dieWithGateway makes the kernel kill an upstream server process when the gateway
// dies, even by SIGKILL, so a crashed gateway leaves no orphaned servers behind.
func dieWithGateway(cmd *exec.Cmd) {
	if cmd.SysProcAttr == nil {
		cmd.SysProcAttr = &syscall.SysProcAttr{}
	}
	cmd.SysProcAttr.Pdeathsig = syscall.SIGKILL
}
