//go:build !unix

package h1

// peekFD is the recv of alive where a non-blocking peek is not available:
// an idle connection is taken as alive, and a receiver that closed it
// shows as a connection error of the call, retried as any other.
func (conn *conn) peekFD(uintptr) bool {
	conn.peeked = true
	return true
}
