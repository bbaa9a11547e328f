//go:build !(linux || darwin || freebsd || openbsd || netbsd || dragonfly)

package spool

import (
	"errors"
	"os"
)

// lockDir fails: the spool's lock needs flock.
func lockDir(dir string) (*os.File, error) {
	return nil, errors.New("spool: needs flock, which this system lacks")
}
