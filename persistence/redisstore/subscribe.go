package redisstore

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/orderlyhq/orderly/persistence"
)

// subscriptionBuffer is how many notifications wait for a slow receiver
// before new ones are dropped (they are hints; the receiver re-reads Redis).
const subscriptionBuffer = 1024

// controlsMessage is the message on a queue's channel after a change of its
// controls (persistence.ControlsNotice); enqueue notices carry a shard
// number. Nodes of earlier releases skip it as a message they cannot read.
const controlsMessage = "ctl"

// cancelPrefix starts a cancel notice: "cx:<shard>:<id>" (action.lua's
// cancel). Nodes of earlier releases skip it as a message they cannot read.
const cancelPrefix = "cx:"

// cancelBuffer is how many cancel notices wait for a slow receiver.
const cancelBuffer = 256

// Timings of a shard channel's subscription (sharded pub/sub only).
const (
	// shardSubHealth is how long a shard channel's connection may stay
	// silent before it is pinged; a ping unanswered for as long again
	// means a dead connection, and the channel is subscribed anew.
	shardSubHealth = 15 * time.Second
	// shardSubRetryMin and shardSubRetryMax bound the wait between two
	// attempts to subscribe a shard channel (doubling from the first).
	shardSubRetryMin = 50 * time.Millisecond
	shardSubRetryMax = 2 * time.Second
	// shardFollowEvery is how often the subscription looks for shard
	// channels of shards a reshard added (docs/storage.md section 11): the
	// queue's shape as the store last read it.
	shardFollowEvery = time.Second
)

// Subscribe implements persistence.QueueStore with Redis pub/sub
// (docs/storage.md §2, notices). It always subscribes to each queue's
// ordinary channel P:notify:q, the only one on standalone Redis and
// Sentinel, and on a Cluster the one producers of earlier releases still
// publish on. On a Cluster in sharded mode (notice.go) it also subscribes
// to every shard channel of the queues (P:{q:s}:2:notify, and the controls
// channel P:{q}:2:notify), on one connection per master (shardSubs); the
// queues must be registered. The go-redis client reconnects and
// resubscribes the ordinary channel by itself; a shard channel's
// subscription is renewed here after an error, a dead connection, or the
// server ending it because its slot moved.
func (s *Store) Subscribe(ctx context.Context, queues ...string) (persistence.Subscription, error) {
	channels := make([]string, len(queues))
	for i, q := range queues {
		if err := persistence.ValidateQueueName(q); err != nil {
			return nil, err
		}
		channels[i] = s.keys.channel(q)
	}
	mode, err := s.detectNoticeMode(ctx)
	if err != nil {
		return nil, fmt.Errorf("redisstore: subscribe: %w", err)
	}
	var shardChannels []string
	if mode == noticesSharded {
		for _, q := range queues {
			nums, err := s.shardNums(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("redisstore: subscribe: %w", err)
			}
			shardChannels = append(shardChannels, s.keys.ctlChannel(q))
			for _, sh := range nums {
				shardChannels = append(shardChannels, s.keys.shardChannel(q, sh))
			}
		}
	}
	ps := s.rdb.Subscribe(ctx, channels...)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, fmt.Errorf("redisstore: subscribe: %w", err)
	}
	sub := &subscription{
		keys:     s.keys,
		ps:       ps,
		rdb:      s.rdb,
		channels: channels,
		shards: func(q string) []int {
			ctx, cancel := context.WithTimeout(context.Background(), time.Second)
			defer cancel()
			nums, _ := s.shardNums(ctx, q)
			return nums
		},
		c:    make(chan persistence.ShardRef, subscriptionBuffer),
		cx:   make(chan persistence.CancelNotice, cancelBuffer),
		done: make(chan struct{}),
		live: map[*redis.PubSub]struct{}{},
	}
	if len(shardChannels) > 0 {
		m := &shardSubs{
			queues:  queues,
			sub:     sub,
			cc:      s.rdb.(*redis.ClusterClient), // sharded mode implies a Cluster
			events:  make(chan groupEvent),
			groups:  map[string]*shardGroup{},
			pending: map[string]bool{},
		}
		for _, ch := range shardChannels {
			m.pending[ch] = true
		}
		// Subscribe every shard channel before returning, so that a
		// notice published after Subscribe returned is received.
		if err := m.place(ctx, true); err != nil {
			sub.Close()
			return nil, fmt.Errorf("redisstore: subscribe: %w", err)
		}
		sub.wg.Add(1)
		go m.run()
	}
	sub.wg.Add(1)
	go sub.run()
	return sub, nil
}

type subscription struct {
	keys     keyspace
	ps       *redis.PubSub // the ordinary channels (guarded by mu once run started)
	rdb      redis.UniversalClient
	channels []string                 // the ordinary channels
	shards   func(queue string) []int // a queue's shard numbers (none: unknown)
	c        chan persistence.ShardRef
	cx       chan persistence.CancelNotice
	done     chan struct{}
	once     sync.Once
	wg       sync.WaitGroup // the forwarding goroutine and the shard followers

	mu     sync.Mutex                 // guards ps, live and closed
	live   map[*redis.PubSub]struct{} // the shard groups' subscriptions
	closed bool
}

// ordinaryHealth is how long the ordinary channels' connection may stay
// silent before it is pinged; a ping unanswered for as long again means a
// dead connection, and the channels are subscribed on a new one.
const ordinaryHealth = 3 * time.Second

// run forwards the notices of the ordinary channels. Notices published
// while the subscription was down (the master failed over, restarted, or
// the connection broke) are lost: when a channel is subscribed again (by
// go-redis's reconnect, or by run on a new connection after a ping went
// unanswered), every shard of its queue is woken once, and its controls
// read, so that a job enqueued meanwhile does not wait for the idle poll.
func (s *subscription) run() {
	defer s.wg.Done()
	ps := s.current()
	// Subscribe read the first confirmation.
	seen := map[string]bool{s.channels[0]: true}
	pinged := false
	for {
		msg, err := ps.ReceiveTimeout(context.Background(), ordinaryHealth)
		select {
		case <-s.done:
			return
		default:
		}
		var ne net.Error
		switch {
		case err != nil && errors.As(err, &ne) && ne.Timeout() && !pinged:
			_ = ps.Ping(context.Background())
			pinged = true
		case err != nil && errors.As(err, &ne) && ne.Timeout():
			ps, pinged = s.resubscribe(ps), false
		case err != nil:
			// go-redis reconnects and subscribes again at the next receive.
			select {
			case <-s.done:
				return
			case <-time.After(shardSubRetryMin):
			}
		default:
			pinged = false
			switch m := msg.(type) {
			case *redis.Message:
				s.deliver(m.Channel, m.Payload)
			case *redis.Subscription:
				if m.Kind == "subscribe" && seen[m.Channel] {
					s.wake(m.Channel)
				}
				seen[m.Channel] = true
			}
		}
	}
}

// current returns the ordinary channels' subscription.
func (s *subscription) current() *redis.PubSub {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.ps
}

// resubscribe replaces a dead subscription of the ordinary channels by a
// new one (its confirmations wake the queues' shards); the old one is
// closed.
func (s *subscription) resubscribe(old *redis.PubSub) *redis.PubSub {
	ps := s.rdb.Subscribe(context.Background(), s.channels...)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		ps.Close()
		return old
	}
	s.ps = ps
	s.mu.Unlock()
	old.Close()
	return ps
}

// wake hands every shard of the channel's queue, and its controls, to the
// receiver, as if each had been notified.
func (s *subscription) wake(channel string) {
	q, ok := s.keys.queueOfChannel(channel)
	if !ok {
		return
	}
	s.deliver(channel, controlsMessage)
	for _, sh := range s.shards(q) {
		s.deliver(channel, strconv.Itoa(sh))
	}
}

// deliver hands one notice to the receiver, or drops it when the receiver
// is busy or the subscription closed.
func (s *subscription) deliver(channel, payload string) {
	q, ok := s.keys.queueOfChannel(channel)
	if !ok {
		return
	}
	if rest, ok := strings.CutPrefix(payload, cancelPrefix); ok {
		s.deliverCancel(q, rest)
		return
	}
	sh, err := strconv.Atoi(payload)
	switch {
	case payload == controlsMessage:
		sh = persistence.ControlsNotice
	case err != nil || sh < 0:
		return
	}
	select {
	case <-s.done:
	case s.c <- persistence.ShardRef{Queue: q, Shard: sh}:
	default: // receiver busy: drop the hint
	}
}

// shardGroup is one master's connection carrying the shard channels of its
// slots. A subscription's shard channels are grouped by the master that
// owns their slots: one connection per master, one SSUBSCRIBE command per
// channel on it (the command takes channels of one slot only). A manager
// goroutine owns the groups and places channels; each group has a reader
// goroutine that forwards notices and reports what ends a channel's
// subscription:
//
//   - the server's sunsubscribe for a channel (its slot moved to another
//     master; go-redis's Channel would ignore it and hear nothing more):
//     the channel is placed again;
//   - an error of the connection, a reply error (an SSUBSCRIBE refused
//     because the slot moved meanwhile), or a ping unanswered for
//     shardSubHealth: the group is closed and all its channels are placed
//     again. go-redis's own reconnect would send one SSUBSCRIBE for all the
//     group's channels, which the server refuses (CROSSSLOT).
//
// Before each placement the manager has go-redis reload the topology. A
// notice published while a channel has no subscription is lost: the idle
// poll covers it.
type shardGroup struct {
	addr     string
	ps       *redis.PubSub
	channels map[string]bool // guarded by the manager (only it touches them)
}

// groupEvent is what a group's reader reports to the manager: lost (the
// server ended that channel's subscription) or err (the group is dead).
type groupEvent struct {
	g    *shardGroup
	lost string
	err  error
}

// shardSubs is the manager's state; only the manager goroutine touches it
// once Subscribe returned.
type shardSubs struct {
	queues  []string // the subscription's queues
	sub     *subscription
	cc      *redis.ClusterClient
	events  chan groupEvent
	groups  map[string]*shardGroup // master address -> group
	pending map[string]bool        // channels to place
}

// place subscribes the pending channels on their masters' groups (new
// groups start their reader). Channels it could not place stay pending.
// With wait set, it reads the confirmations of new groups itself before
// their readers start, so that Subscribe returns subscribed.
func (m *shardSubs) place(ctx context.Context, wait bool) error {
	var firstErr error
	fresh := map[*shardGroup][]string{}
	for ch := range m.pending {
		node, err := m.cc.MasterForKey(ctx, ch)
		if err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		addr := node.Options().Addr
		g := m.groups[addr]
		if g == nil {
			g = &shardGroup{addr: addr, ps: node.SSubscribe(ctx), channels: map[string]bool{}}
			m.groups[addr] = g
			m.sub.track(g.ps)
			fresh[g] = nil
		}
		if err := g.ps.SSubscribe(ctx, ch); err != nil {
			firstErr = cmp.Or(firstErr, err)
			continue
		}
		g.channels[ch] = true
		delete(m.pending, ch)
		if _, ok := fresh[g]; ok {
			fresh[g] = append(fresh[g], ch)
		}
	}
	for g, chs := range fresh {
		if wait {
			for range chs {
				msg, err := g.ps.ReceiveTimeout(ctx, shardSubHealth)
				if err == nil {
					if sm, ok := msg.(*redis.Subscription); !ok || sm.Kind != "ssubscribe" {
						err = fmt.Errorf("unexpected reply %v", msg)
					}
				}
				if err != nil {
					return err // Subscribe closes everything
				}
			}
		}
		m.sub.wg.Add(1)
		go m.read(g)
	}
	return firstErr
}

// drop closes a group and makes its channels pending; false when it was
// dropped already.
func (m *shardSubs) drop(g *shardGroup) bool {
	if m.groups[g.addr] != g {
		return false
	}
	delete(m.groups, g.addr)
	for ch := range g.channels {
		m.pending[ch] = true
	}
	m.sub.untrack(g.ps)
	return true
}

// run is the manager: it places channels again until Close.
func (m *shardSubs) run() {
	defer m.sub.wg.Done()
	ctx := context.Background()
	wait := shardSubRetryMin
	var retry <-chan time.Time
	follow := time.NewTicker(shardFollowEvery)
	defer follow.Stop()
	for {
		if len(m.pending) > 0 && retry == nil {
			retry = time.After(wait)
		}
		select {
		case <-m.sub.done:
			return
		case <-follow.C:
			m.follow()
		case ev := <-m.events:
			switch {
			case ev.err != nil:
				if !m.drop(ev.g) {
					continue // the end of a group closed here
				}
			case ev.g.channels[ev.lost] && m.groups[ev.g.addr] == ev.g:
				delete(ev.g.channels, ev.lost)
				m.pending[ev.lost] = true
			default:
				continue
			}
			m.cc.ReloadState(ctx)
			wait = shardSubRetryMin
		case <-retry:
			retry = nil
			if m.place(ctx, false) != nil {
				m.cc.ReloadState(ctx)
				wait = min(2*wait, shardSubRetryMax)
			} else {
				wait = shardSubRetryMin
			}
		}
	}
}

// follow makes the shard channels of the queues' current shards that are
// neither subscribed nor pending pending: a reshard added shards. (Those of
// drained shards stay subscribed: nothing is published there any more.)
func (m *shardSubs) follow() {
	have := map[string]bool{}
	for _, g := range m.groups {
		for ch := range g.channels {
			have[ch] = true
		}
	}
	for _, q := range m.queues {
		for _, sh := range m.sub.shards(q) {
			if ch := m.sub.keys.shardChannel(q, sh); !have[ch] {
				m.pending[ch] = true
			}
		}
	}
}

// read forwards one group's notices and reports the end of a channel's
// subscription, or of the group, to the manager.
func (m *shardSubs) read(g *shardGroup) {
	defer m.sub.wg.Done()
	ctx := context.Background()
	report := func(ev groupEvent) bool {
		select {
		case m.events <- ev:
			return true
		case <-m.sub.done:
			return false
		}
	}
	pinged := false
	for {
		msg, err := g.ps.ReceiveTimeout(ctx, shardSubHealth)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !pinged {
				pinged = true
				if g.ps.Ping(ctx) == nil {
					continue
				}
			}
			report(groupEvent{g: g, err: err})
			return
		}
		pinged = false
		switch sm := msg.(type) {
		case *redis.Message:
			m.sub.deliver(sm.Channel, sm.Payload)
		case *redis.Subscription:
			if sm.Kind == "sunsubscribe" && !report(groupEvent{g: g, lost: sm.Channel}) {
				return
			}
		}
	}
}

func (s *subscription) C() <-chan persistence.ShardRef { return s.c }

// Cancels implements persistence.CancelSubscription.
func (s *subscription) Cancels() <-chan persistence.CancelNotice { return s.cx }

// deliverCancel hands a cancel notice ("<shard>:<id>" after the prefix) to
// the receiver, or drops it when the receiver is busy or the subscription
// closed.
func (s *subscription) deliverCancel(queue, rest string) {
	num, id, ok := strings.Cut(rest, ":")
	sh, err := strconv.Atoi(num)
	if !ok || err != nil || sh < 0 || id == "" {
		return
	}
	select {
	case <-s.done:
	case s.cx <- persistence.CancelNotice{ShardRef: persistence.ShardRef{Queue: queue, Shard: sh}, ID: id}:
	default: // receiver busy: the settle disposes of the id all the same
	}
}

// track registers a shard group's subscription so that Close ends it; it
// closes it at once when the subscription is closed already.
func (s *subscription) track(p *redis.PubSub) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed {
		p.Close()
		return
	}
	s.live[p] = struct{}{}
}

// untrack closes a shard group's subscription.
func (s *subscription) untrack(p *redis.PubSub) {
	s.mu.Lock()
	delete(s.live, p)
	s.mu.Unlock()
	p.Close()
}

// closeAll marks the subscription closed and closes every connection.
func (s *subscription) closeAll() error {
	s.mu.Lock()
	s.closed = true
	live := s.live
	s.live = map[*redis.PubSub]struct{}{}
	ps := s.ps
	s.mu.Unlock()
	err := ps.Close()
	for p := range live {
		p.Close()
	}
	return err
}

func (s *subscription) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.closeAll()
		s.wg.Wait()
		close(s.c)
		close(s.cx)
	})
	return err
}
