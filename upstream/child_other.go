//go:build !linux

package upstream

import "os/exec"

// dieWithGateway does nothing where the kernel cannot tie a child's life to its
// parent's; Server.Close still stops every server it started.
func dieWithGateway(*exec.Cmd) {}

// endGroup does nothing here: the server was not given a process group of its own.
func endGroup(int) {}
