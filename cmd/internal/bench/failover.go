package bench

import (
	"context"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"syscall"
	"time"

	"github.com/orderlyhq/orderly/internal/history"
	"github.com/orderlyhq/orderly/internal/redisserver"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/webhook/webhooktest"
)

// nodeProc is a node process of the failover scenario.
type nodeProc struct {
	name   string
	http   string
	gossip string
	cmd    *exec.Cmd
	done   chan struct{}
}

func (r *runner) startProc(name, prefix, config, seed string, dir string) (*nodeProc, error) {
	hp, err := redisserver.FreePort()
	if err != nil {
		return nil, err
	}
	gp, err := redisserver.FreePort()
	if err != nil {
		return nil, err
	}
	p := &nodeProc{name: name, http: "127.0.0.1:" + strconv.Itoa(hp), gossip: "127.0.0.1:" + strconv.Itoa(gp), done: make(chan struct{})}
	args := []string{"--name", name, "--redis", r.redisURL, "--redis-prefix", prefix, "--config", config,
		"--http", p.http, "--bind", p.gossip, "--log-level", "warn"}
	if seed != "" {
		args = append(args, "--join", seed)
	}
	p.cmd = exec.Command(r.cfg.NodeBinary, args...)
	logf, err := os.Create(filepath.Join(dir, name+".log"))
	if err != nil {
		return nil, err
	}
	p.cmd.Stdout, p.cmd.Stderr = logf, logf
	if err := p.cmd.Start(); err != nil {
		logf.Close()
		return nil, fmt.Errorf("start node %s (%s): %w", name, r.cfg.NodeBinary, err)
	}
	go func() { p.cmd.Wait(); logf.Close(); close(p.done) }()
	deadline := time.Now().Add(30 * time.Second)
	for {
		res, err := http.Get("http://" + p.http + "/readyz")
		if err == nil {
			res.Body.Close()
			if res.StatusCode == 200 {
				return p, nil
			}
		}
		select {
		case <-p.done:
			return nil, fmt.Errorf("node %s exited at start (see %s)", name, logf.Name())
		default:
		}
		if time.Now().After(deadline) {
			p.kill()
			return nil, fmt.Errorf("node %s not ready within 30s (see %s)", name, logf.Name())
		}
		time.Sleep(20 * time.Millisecond)
	}
}

func (p *nodeProc) kill() {
	p.cmd.Process.Signal(syscall.SIGKILL)
	<-p.done
}

func (p *nodeProc) stop() {
	p.cmd.Process.Signal(syscall.SIGTERM)
	select {
	case <-p.done:
	case <-time.After(30 * time.Second):
		p.kill()
	}
}

// failover runs three node processes handling a webhook queue under load,
// kills one with SIGKILL, and measures how long until its shards are held
// by the others; then audits everything that was delivered.
func (r *runner) failover(ctx context.Context, sc scenario, res *Result) error {
	c, admin, prefix, err := r.admin(sc)
	if err != nil {
		return err
	}
	defer c.Close()
	rcv := webhooktest.NewReceiver(nil)
	defer rcv.Close()
	dir, err := os.MkdirTemp("", "orderly-bench-")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	config := filepath.Join(dir, "orderly.yaml")
	yaml := fmt.Sprintf("queues:\n  - {name: %s, shards: %d, batch_size: %d, handler: {type: http, url: %q}}\n", queue, sc.shards, sc.batch, rcv.URL)
	if err := os.WriteFile(config, []byte(yaml), 0o600); err != nil {
		return err
	}
	var procs []*nodeProc
	defer func() {
		for _, p := range procs {
			p.stop()
		}
	}()
	for i := range sc.nodes {
		seed := ""
		if i > 0 {
			seed = procs[0].gossip
		}
		r.progress(fmt.Sprintf("%s: starting node %d", sc.name, i+1))
		p, err := r.startProc(fmt.Sprintf("bench-%d", i+1), prefix, config, seed, dir)
		if err != nil {
			return err
		}
		procs = append(procs, p)
	}
	if err := r.waitOwned(ctx, admin, sc.shards, names(procs), 30*time.Second); err != nil {
		return err
	}

	// Load: rising scores to many ids, through the store, while the kill
	// happens.
	ids := max(int(float64(r.cfg.Jobs)*sc.jobs)/200, 10)
	producer := history.Produce(ids, 10*time.Millisecond, func(ctx context.Context, jobs []persistence.NewJob) error {
		return admin.Enqueue(ctx, queue, jobs)
	})
	defer producer.Stop()
	time.Sleep(2 * time.Second)
	victim := procs[1]
	r.progress(fmt.Sprintf("%s: SIGKILL %s", sc.name, victim.name))
	killed := time.Now()
	victim.kill()
	procs = append(procs[:1], procs[2:]...)
	if err := r.waitOwned(ctx, admin, sc.shards, names(procs), 60*time.Second); err != nil {
		return err
	}
	res.FailoverSec = time.Since(killed).Seconds()
	time.Sleep(2 * time.Second)
	producer.Stop()
	if err := waitEmpty(ctx, admin); err != nil {
		return err
	}
	if err := waitAnswered(rcv, 10*time.Second); err != nil {
		return err
	}
	enqueued := producer.Enqueued()
	for _, ps := range enqueued {
		res.Jobs += len(ps)
	}
	res.IDs = len(enqueued)
	res.Audit = audit(history.FromWebhook(rcv.Calls()), enqueued, true)
	return cleanup(ctx, c, prefix)
}

func names(ps []*nodeProc) map[string]bool {
	out := map[string]bool{}
	for _, p := range ps {
		out[p.name] = true
	}
	return out
}

// waitAnswered waits until the receiver answered every request it got, so
// that its record is complete: a request the killed node left behind ends
// when its connection does.
func waitAnswered(rcv *webhooktest.Receiver, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for rcv.Active() > 0 {
		if time.Now().After(deadline) {
			return fmt.Errorf("the webhook receiver still answers %d requests after %s", rcv.Active(), timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
	return nil
}

// waitOwned waits until every shard is held by one of the named nodes.
func (r *runner) waitOwned(ctx context.Context, s persistence.Store, shards int, by map[string]bool, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		owners, err := s.ShardOwners(ctx, queue)
		if err == nil && len(owners) == shards {
			ok := true
			for _, o := range owners {
				ok = ok && by[o.Owner]
			}
			if ok {
				return nil
			}
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("shards not held by %v within %s", by, timeout)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
