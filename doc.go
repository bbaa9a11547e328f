// Package orderly runs ordered background jobs: every job has an id, jobs of
// one id are never processed concurrently and reach their handler in score
// order, payloads of one id merge while they wait, failures retry with
// backoff, exhausted payloads go to a morgue, and in-flight work survives a
// crash. Redis holds the queues; nodes share each queue's shards.
//
// A program defines Workers (a queue and its handler), starts a Node on a
// persistence.Store, and enqueues with the client package, over HTTP, or by
// actor message.
package orderly
