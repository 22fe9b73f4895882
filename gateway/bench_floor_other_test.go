//go:build !linux

package gateway_test

import "os"

// dataSync flushes f's data to stable storage; without fdatasync(2), with the
// platform's fsync.
func dataSync(f *os.File) error { return f.Sync() }

const dataSyncName = "fsync"
