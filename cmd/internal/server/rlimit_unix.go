//go:build unix

package server

import "syscall"

// openFileLimit returns the process's limit of open files (its soft
// RLIMIT_NOFILE, which the Go runtime raises to the hard limit at start),
// or 0 when it cannot be read.
func openFileLimit() uint64 {
	var l syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &l); err != nil {
		return 0
	}
	return l.Cur
}
