package gateway_test

import (
	"os"
	"syscall"
)

// dataSync flushes f's data to stable storage as SQLite's synchronous=FULL commit
// does on Linux: fdatasync(2).
func dataSync(f *os.File) error { return syscall.Fdatasync(int(f.Fd())) }

const dataSyncName = "fdatasync"
