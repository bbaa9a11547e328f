package redisstore

import (
	"context"
	"errors"
	"fmt"
	"net"
	"strconv"
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
)

// Subscribe implements persistence.Store with Redis pub/sub
// (docs/storage.md §2, notices). It always subscribes to each queue's
// ordinary channel P:notify:q, the only one on standalone Redis and
// Sentinel, and on a Cluster the one producers of earlier releases still
// publish on. On a Cluster in sharded mode (notice.go) it also subscribes
// to every shard channel of the queues (P:{q:s}:2:notify, and the controls
// channel P:{q}:2:notify), each on its own connection to the master of its
// slot; the queues must be registered. The go-redis client reconnects and
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
			n, err := s.shardsOf(ctx, q)
			if err != nil {
				return nil, fmt.Errorf("redisstore: subscribe: %w", err)
			}
			shardChannels = append(shardChannels, s.keys.ctlChannel(q))
			for sh := range n {
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
		keys: s.keys,
		ps:   ps,
		c:    make(chan persistence.ShardRef, subscriptionBuffer),
		done: make(chan struct{}),
		live: map[*redis.PubSub]struct{}{},
	}
	if len(shardChannels) > 0 {
		cc := s.rdb.(*redis.ClusterClient) // sharded mode implies a Cluster
		// Subscribe every shard channel before returning, so that a
		// notice published after Subscribe returned is received.
		first := make([]*redis.PubSub, len(shardChannels))
		for i, ch := range shardChannels {
			p, err := sub.shardSubscribe(ctx, cc, ch)
			if err != nil {
				sub.closeAll()
				return nil, fmt.Errorf("redisstore: subscribe %s: %w", ch, err)
			}
			first[i] = p
		}
		for i, ch := range shardChannels {
			sub.wg.Add(1)
			go sub.follow(cc, ch, first[i])
		}
	}
	sub.wg.Add(1)
	go sub.run()
	return sub, nil
}

type subscription struct {
	keys keyspace
	ps   *redis.PubSub // the ordinary channels
	c    chan persistence.ShardRef
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup // the forwarding goroutine and the shard followers

	mu     sync.Mutex                 // guards live and closed
	live   map[*redis.PubSub]struct{} // the shard channels' subscriptions
	closed bool
}

// run forwards the notices of the ordinary channels.
func (s *subscription) run() {
	defer s.wg.Done()
	in := s.ps.Channel(redis.WithChannelSize(subscriptionBuffer))
	for {
		select {
		case <-s.done:
			return
		case m, ok := <-in:
			if !ok {
				return
			}
			s.deliver(m.Channel, m.Payload)
		}
	}
}

// deliver hands one notice to the receiver, or drops it when the receiver
// is busy or the subscription closed.
func (s *subscription) deliver(channel, payload string) {
	q, ok := s.keys.queueOfChannel(channel)
	if !ok {
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

// shardSubscribe subscribes one shard channel on a connection of its own to
// the master of its slot, and waits for the server's confirmation. It
// registers the subscription so that Close ends it.
func (s *subscription) shardSubscribe(ctx context.Context, cc *redis.ClusterClient, channel string) (*redis.PubSub, error) {
	p := cc.SSubscribe(ctx, channel)
	s.mu.Lock()
	if s.closed {
		s.mu.Unlock()
		p.Close()
		return nil, errSubscriptionClosed
	}
	s.live[p] = struct{}{}
	s.mu.Unlock()
	msg, err := p.ReceiveTimeout(ctx, shardSubHealth)
	if err == nil {
		if m, ok := msg.(*redis.Subscription); !ok || m.Kind != "ssubscribe" {
			err = fmt.Errorf("unexpected reply %v", msg)
		}
	}
	if err != nil {
		s.drop(p)
		// The slot may have moved, or its master changed: have the
		// client read the topology again before the next attempt.
		cc.ReloadState(ctx)
		return nil, err
	}
	return p, nil
}

// drop closes one shard channel's subscription.
func (s *subscription) drop(p *redis.PubSub) {
	s.mu.Lock()
	delete(s.live, p)
	s.mu.Unlock()
	p.Close()
}

// errSubscriptionClosed ends a shard follower.
var errSubscriptionClosed = errors.New("redisstore: subscription closed")

// follow forwards the notices of one shard channel until Close, and
// subscribes it anew whenever its subscription ends: on an error of the
// connection (its master failed over: go-redis would reconnect to the slot
// owner it knew), on a connection silent past a ping, and when the server
// ends the subscription (sunsubscribe: the slot moved to another master,
// which go-redis's Channel ignores).
func (s *subscription) follow(cc *redis.ClusterClient, channel string, p *redis.PubSub) {
	defer s.wg.Done()
	ctx := context.Background()
	wait := shardSubRetryMin
	for {
		if p == nil {
			var err error
			if p, err = s.shardSubscribe(ctx, cc, channel); err != nil {
				if errors.Is(err, errSubscriptionClosed) {
					return
				}
				select {
				case <-s.done:
					return
				case <-time.After(wait):
				}
				wait = min(2*wait, shardSubRetryMax)
				continue
			}
		}
		s.receive(ctx, p)
		s.drop(p)
		p = nil
		select {
		case <-s.done:
			return
		default:
		}
		// A notice published while no subscription stands is lost: the
		// idle poll covers it.
		cc.ReloadState(ctx)
	}
}

// receive forwards one subscription's notices and returns when it ended.
func (s *subscription) receive(ctx context.Context, p *redis.PubSub) {
	pinged := false
	for {
		msg, err := p.ReceiveTimeout(ctx, shardSubHealth)
		if err != nil {
			var ne net.Error
			if errors.As(err, &ne) && ne.Timeout() && !pinged {
				pinged = true
				if p.Ping(ctx) == nil {
					continue
				}
			}
			return
		}
		pinged = false
		switch m := msg.(type) {
		case *redis.Message:
			s.deliver(m.Channel, m.Payload)
		case *redis.Subscription:
			if m.Kind == "sunsubscribe" {
				return
			}
		}
	}
}

func (s *subscription) C() <-chan persistence.ShardRef { return s.c }

// closeAll marks the subscription closed and closes every connection.
func (s *subscription) closeAll() error {
	s.mu.Lock()
	s.closed = true
	live := s.live
	s.live = map[*redis.PubSub]struct{}{}
	s.mu.Unlock()
	err := s.ps.Close()
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
	})
	return err
}
