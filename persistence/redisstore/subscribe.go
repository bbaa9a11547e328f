package redisstore

import (
	"context"
	"fmt"
	"strconv"
	"sync"

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

// Subscribe implements persistence.Store with Redis pub/sub on one channel
// per queue. The go-redis client reconnects and resubscribes by itself.
func (s *Store) Subscribe(ctx context.Context, queues ...string) (persistence.Subscription, error) {
	channels := make([]string, len(queues))
	for i, q := range queues {
		if err := persistence.ValidateQueueName(q); err != nil {
			return nil, err
		}
		channels[i] = s.keys.channel(q)
	}
	ps := s.rdb.Subscribe(ctx, channels...)
	if _, err := ps.Receive(ctx); err != nil {
		ps.Close()
		return nil, fmt.Errorf("redisstore: subscribe: %w", err)
	}
	sub := &subscription{ps: ps, c: make(chan persistence.ShardRef, subscriptionBuffer), done: make(chan struct{})}
	sub.wg.Add(1)
	go sub.run(s.keys)
	return sub, nil
}

type subscription struct {
	ps   *redis.PubSub
	c    chan persistence.ShardRef
	done chan struct{}
	once sync.Once
	wg   sync.WaitGroup // the forwarding goroutine
}

func (s *subscription) run(keys keyspace) {
	defer s.wg.Done()
	defer close(s.c)
	in := s.ps.Channel(redis.WithChannelSize(subscriptionBuffer))
	for {
		select {
		case <-s.done:
			return
		case m, ok := <-in:
			if !ok {
				return
			}
			q, ok := keys.queueOfChannel(m.Channel)
			if !ok {
				continue
			}
			sh, err := strconv.Atoi(m.Payload)
			switch {
			case m.Payload == controlsMessage:
				sh = persistence.ControlsNotice
			case err != nil || sh < 0:
				continue
			}
			select {
			case s.c <- persistence.ShardRef{Queue: q, Shard: sh}:
			default: // receiver busy: drop the hint
			}
		}
	}
}

func (s *subscription) C() <-chan persistence.ShardRef { return s.c }

func (s *subscription) Close() error {
	var err error
	s.once.Do(func() {
		close(s.done)
		err = s.ps.Close()
		s.wg.Wait()
	})
	return err
}
