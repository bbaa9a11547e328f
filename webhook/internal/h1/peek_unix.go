//go:build unix

package h1

import "syscall"

// peekFD is the recv of alive: one non-blocking recv with MSG_PEEK, which
// finds nothing to read on a connection the receiver neither closed nor
// wrote to.
func (conn *conn) peekFD(fd uintptr) bool {
	var b [1]byte
	n, _, err := syscall.Recvfrom(int(fd), b[:], syscall.MSG_PEEK|syscall.MSG_DONTWAIT)
	conn.peeked = n < 0 && (err == syscall.EAGAIN || err == syscall.EWOULDBLOCK)
	return true
}
