// Package redisserver runs redis-server processes on free ports of
// 127.0.0.1 in temporary directories, for tests (through redistest) and the
// benchmark command. A server can be killed and started again on the same
// port and directory, reloading its AOF.
package redisserver

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/redis/go-redis/v9"
)

// EnvBinary names the environment variable that points at a redis-server
// binary other than the one on PATH.
const EnvBinary = "ORDERLY_REDIS_SERVER"

// ErrNoBinary is returned when no redis-server binary is found.
var ErrNoBinary = errors.New("redisserver: no redis-server binary found (Debian: apt-get install redis-server)")

// Binary returns the redis-server binary to use, or "" when there is none.
func Binary() string {
	if b := os.Getenv(EnvBinary); b != "" {
		return b
	}
	b, err := exec.LookPath("redis-server")
	if err != nil {
		return ""
	}
	return b
}

// Options configure a server.
type Options struct {
	// AOF turns on the append-only file with appendfsync always, so that
	// every acknowledged write survives a kill.
	AOF bool
	// Args are extra redis-server arguments, e.g. "--maxmemory-policy",
	// "allkeys-lru".
	Args []string
}

// Server is a redis-server process.
type Server struct {
	opts Options
	bin  string
	dir  string
	port int
	// conf, when set, is a config file passed first to redis-server, which
	// then runs as a sentinel with it (see StartSentinel).
	conf string

	mu     sync.Mutex // guards cmd and exited
	cmd    *exec.Cmd
	exited chan struct{} // closed when cmd has exited and was reaped
}

// Start starts a server on a free port in a new temporary directory.
func Start(opts Options) (*Server, error) {
	bin := Binary()
	if bin == "" {
		return nil, ErrNoBinary
	}
	dir, err := os.MkdirTemp("", "orderly-redis-")
	if err != nil {
		return nil, fmt.Errorf("redisserver: temp dir: %w", err)
	}
	s := &Server{opts: opts, bin: bin, dir: dir}
	var lastErr error
	for range 5 {
		port, err := FreePort()
		if err != nil {
			return nil, err
		}
		s.port = port
		if lastErr = s.launch(); lastErr == nil {
			return s, nil
		}
	}
	os.RemoveAll(dir)
	return nil, lastErr
}

// handedOut holds the ports FreePort has returned in this process: the
// kernel may give a port just closed to the next listen on :0, so two calls
// in a row (a node's HTTP and gossip ports) could otherwise return the same
// port.
var handedOut portSet

// portSet is a set of ports, safe for concurrent use.
type portSet struct {
	mu    sync.Mutex
	ports map[int]bool
}

// claim records port as handed out and reports whether it was not before.
func (ps *portSet) claim(port int) bool {
	ps.mu.Lock()
	defer ps.mu.Unlock()
	if ps.ports == nil {
		ps.ports = make(map[int]bool)
	}
	if ps.ports[port] {
		return false
	}
	ps.ports[port] = true
	return true
}

// FreePort returns a TCP port on 127.0.0.1 that was free a moment ago and
// that no earlier call in this process returned. It is taken below the
// system's ephemeral port range (staticPorts), so that no outgoing
// connection of this or another process takes it before the caller binds
// it; without room there, it is one the kernel offers.
func FreePort() (int, error) {
	lo, hi := staticPorts()
	for range 200 {
		if hi <= lo {
			break
		}
		port := lo + rand.IntN(hi-lo)
		if portFree(port) && handedOut.claim(port) {
			return port, nil
		}
	}
	for range 100 {
		l, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			return 0, fmt.Errorf("redisserver: free port: %w", err)
		}
		port := l.Addr().(*net.TCPAddr).Port
		l.Close()
		if handedOut.claim(port) {
			return port, nil
		}
	}
	return 0, errors.New("redisserver: free port: every port offered was handed out before")
}

// staticPorts returns the ports [lo, hi) the test servers and nodes listen
// on: from 10000 up to the start of the kernel's ephemeral range
// (net.ipv4.ip_local_port_range; 32768 when unknown), from which outgoing
// connections take their ports.
func staticPorts() (int, int) {
	hi := 32768
	if b, err := os.ReadFile("/proc/sys/net/ipv4/ip_local_port_range"); err == nil {
		if f := strings.Fields(string(b)); len(f) == 2 {
			if n, err := strconv.Atoi(f[0]); err == nil {
				hi = n
			}
		}
	}
	return 10000, hi
}

func (s *Server) launch() error {
	return s.start(exec.Command(s.bin, s.args()...))
}

// args returns the command line of the server.
func (s *Server) args() []string {
	if s.conf != "" {
		return []string{s.conf, "--sentinel", "--port", strconv.Itoa(s.port)}
	}
	args := []string{
		"--port", strconv.Itoa(s.port),
		"--bind", "127.0.0.1",
		"--dir", s.dir,
		"--save", "",
		"--daemonize", "no",
		"--logfile", filepath.Join(s.dir, "redis.log"),
		"--protected-mode", "no",
	}
	if s.opts.AOF {
		args = append(args, "--appendonly", "yes", "--appendfsync", "always")
	} else {
		args = append(args, "--appendonly", "no")
	}
	args = append(args, s.opts.Args...)
	return args
}

func (s *Server) start(cmd *exec.Cmd) error {
	if err := cmd.Start(); err != nil {
		return fmt.Errorf("redisserver: start redis-server: %w", err)
	}
	exited := make(chan struct{})
	go func() { cmd.Wait(); close(exited) }()
	c := redis.NewClient(&redis.Options{Addr: s.Addr(), MaxRetries: -1, DialTimeout: 200 * time.Millisecond})
	defer c.Close()
	deadline := time.Now().Add(10 * time.Second)
	for {
		select {
		case <-exited:
			log, _ := os.ReadFile(filepath.Join(s.dir, "redis.log"))
			return fmt.Errorf("redisserver: redis-server on port %d exited at start: %s", s.port, lastLines(string(log), 5))
		default:
		}
		ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
		err := c.Ping(ctx).Err()
		cancel()
		if answered(err) {
			break
		}
		if time.Now().After(deadline) {
			cmd.Process.Kill()
			<-exited
			return fmt.Errorf("redisserver: redis-server on port %d did not answer within 10s: %v", s.port, err)
		}
		time.Sleep(10 * time.Millisecond)
	}
	s.mu.Lock()
	s.cmd, s.exited = cmd, exited
	s.mu.Unlock()
	return nil
}

// answered reports whether a PING's outcome shows a server ready for
// commands: a reply, or an error reply other than LOADING (a server started
// with requirepass answers NOAUTH to a client without the password).
func answered(err error) bool {
	if err == nil {
		return true
	}
	var reply redis.Error
	return errors.As(err, &reply) && !strings.HasPrefix(reply.Error(), "LOADING")
}

func lastLines(s string, n int) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	if len(lines) > n {
		lines = lines[len(lines)-n:]
	}
	return strings.Join(lines, " | ")
}

// Addr returns host:port of the server.
func (s *Server) Addr() string { return "127.0.0.1:" + strconv.Itoa(s.port) }

// URL returns a redis:// URL of the server.
func (s *Server) URL() string { return "redis://" + s.Addr() + "/0" }

// Pid returns the server's process id (0 when stopped).
func (s *Server) Pid() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.cmd == nil {
		return 0
	}
	return s.cmd.Process.Pid
}

// Kill stops the server with SIGKILL: what was not written to the AOF is lost.
func (s *Server) Kill() { s.stop(syscall.SIGKILL) }

// Stop stops the server gracefully (SIGTERM).
func (s *Server) Stop() { s.stop(syscall.SIGTERM) }

// Restart starts a stopped server again on the same port and directory, so
// it reloads its AOF.
func (s *Server) Restart() error {
	var err error
	for range 50 { // the port may linger briefly after a kill
		if err = s.launch(); err == nil {
			return nil
		}
		time.Sleep(100 * time.Millisecond)
	}
	return fmt.Errorf("redisserver: restart: %w", err)
}

// Close kills the server and removes its directory.
func (s *Server) Close() {
	s.Kill()
	os.RemoveAll(s.dir)
}

func (s *Server) stop(sig syscall.Signal) {
	s.mu.Lock()
	cmd, exited := s.cmd, s.exited
	s.cmd, s.exited = nil, nil
	s.mu.Unlock()
	if cmd == nil {
		return
	}
	cmd.Process.Signal(sig)
	select {
	case <-exited:
	case <-time.After(10 * time.Second):
		cmd.Process.Kill()
		<-exited
	}
}
