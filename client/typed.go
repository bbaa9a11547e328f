package client

import (
	"context"
	"encoding/json"
	"fmt"
	"time"
)

// Codec turns values of T into payload bytes. It has the methods of
// orderly.Codec, so one codec value serves the producer and the worker.
type Codec[T any] interface {
	Marshal(v T) ([]byte, error)
	Unmarshal(data []byte, v *T) error
}

// JSON is the codec of encoding/json, the default of NewQueue.
type JSON[T any] struct{}

// Marshal implements Codec.
func (JSON[T]) Marshal(v T) ([]byte, error) { return json.Marshal(v) }

// Unmarshal implements Codec.
func (JSON[T]) Unmarshal(data []byte, v *T) error { return json.Unmarshal(data, v) }

// Queue enqueues values of T into one queue through a Client, encoding them
// with its codec. It is safe for concurrent use.
type Queue[T any] struct {
	c     *Client
	name  string
	codec Codec[T]
}

// NewQueue returns the typed view of the queue name, encoding values as
// JSON.
//
//	emails := client.NewQueue[Email](c, "emails")
//	err := emails.Enqueue(ctx, "user-42", Email{To: "ada@example.com"})
func NewQueue[T any](c *Client, name string) *Queue[T] {
	return NewQueueWith[T](c, name, JSON[T]{})
}

// NewQueueWith is NewQueue with another codec.
func NewQueueWith[T any](c *Client, name string, codec Codec[T]) *Queue[T] {
	return &Queue[T]{c: c, name: name, codec: codec}
}

// Name returns the queue's name.
func (q *Queue[T]) Name() string { return q.name }

// Enqueue adds v under id, due now, scored now (Client.Enqueue's defaults).
func (q *Queue[T]) Enqueue(ctx context.Context, id string, v T) error {
	job, err := q.Job(id, v)
	if err != nil {
		return err
	}
	return q.c.Enqueue(ctx, q.name, job)
}

// EnqueueIn adds v under id, due after d.
func (q *Queue[T]) EnqueueIn(ctx context.Context, id string, v T, d time.Duration) error {
	job, err := q.Job(id, v)
	if err != nil {
		return err
	}
	job.PerformIn = d
	return q.c.Enqueue(ctx, q.name, job)
}

// Job returns the Job that carries v under id, for the settings Enqueue
// does not take (Score, PerformAt, DedupKey, ExpiresIn); enqueue it with
// EnqueueJobs.
func (q *Queue[T]) Job(id string, v T) (Job, error) {
	data, err := q.codec.Marshal(v)
	if err != nil {
		return Job{}, fmt.Errorf("client: encoding the payload of %q for queue %s: %w", id, q.name, err)
	}
	return Job{ID: id, Payload: data}, nil
}

// EnqueueJobs adds jobs built with Job (or by hand) to the queue, in one
// call.
func (q *Queue[T]) EnqueueJobs(ctx context.Context, jobs ...Job) error {
	return q.c.Enqueue(ctx, q.name, jobs...)
}
