package redisserver

import "testing"

// A node takes two ports in a row (HTTP and gossip); the kernel may offer a
// port just closed again, and a node given the same port twice fails to
// start. FreePort never returns a port twice in one process.
func TestFreePortNeverRepeats(t *testing.T) {
	seen := make(map[int]bool)
	for range 500 {
		p, err := FreePort()
		if err != nil {
			t.Fatal(err)
		}
		if seen[p] {
			t.Fatalf("port %d returned twice", p)
		}
		seen[p] = true
	}
}
