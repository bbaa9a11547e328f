//go:build linux || darwin || freebsd || openbsd || netbsd || dragonfly

package spool

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
)

// lockDir takes the directory's lock: an exclusive flock on its lock file,
// which holds the owner's pid. The lock ends with the process (or when the
// returned file is closed), so a crashed owner leaves nothing to clean.
func lockDir(dir string) (*os.File, error) {
	path := filepath.Join(dir, lockFile)
	f, err := os.OpenFile(path, os.O_RDWR|os.O_CREATE, 0o600)
	if err != nil {
		return nil, fmt.Errorf("spool: open the lock of %s: %w", dir, err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			owner := "another process"
			if b, rerr := os.ReadFile(path); rerr == nil {
				if pid, perr := strconv.Atoi(strings.TrimSpace(string(b))); perr == nil {
					owner = "process " + strconv.Itoa(pid)
				}
			}
			return nil, fmt.Errorf("%w: %s holds %s", ErrLocked, owner, path)
		}
		return nil, fmt.Errorf("spool: lock %s: %w", dir, err)
	}
	if err := f.Truncate(0); err == nil {
		_, _ = f.WriteAt([]byte(strconv.Itoa(os.Getpid())+"\n"), 0)
	}
	return f, nil
}
