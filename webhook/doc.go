// Package webhook handles a queue with an HTTP endpoint instead of Go code,
// so that workers can be written in any language. New returns a Sender
// whose Handle method is the queue's orderly.HandlerFunc: it POSTs each
// batch to a URL and turns the answer into the batch's outcome.
//
//	sender, err := webhook.New(&webhook.Config{URL: "http://127.0.0.1:9000/perform"})
//	...
//	node, err := orderly.NewNode(store, &orderly.Config{Workers: []orderly.Worker{
//		{Queue: "emails", Handler: sender.Handle},
//	}})
//	...
//	err = node.Stop(ctx)
//	sender.Close() // after the node stopped: no connection or timer outlives it
//
// The protocol (the request's body and headers, the answer, the signature)
// is package wire's, which a receiver written in Go imports alone: it links
// nothing of the node. The sender writes the body with wire.Request, signs
// it as wire.Sign does when Config.Secret is set, and reads a 2xx answer
// as a wire.Answer.
//
// A failed id of the answer is handled as if a Go handler had failed it
// (retried with backoff, then moved to the morgue), and its message becomes
// the job's error (an empty message is replaced by a generic one). Ids that
// are not in the batch are ignored, and logged in one warning per answer
// with their count and the first ten of them. The answer's "retry_in",
// "dead" and "discard" become orderly.Snooze, orderly.Dead and
// orderly.Discard for their ids. Sender.ReportDead posts a queue's dead
// jobs to a retries_exhausted URL (docs/webhooks.md). Anything but an empty 2xx
// answer or a wire.Answer fails the whole batch; the batch's error says
// why: the status and the first 4 KiB of the body, the timeout, or the
// connection error.
//
// Extra headers from Config.Header (for instance Authorization) are sent
// with every request. Credentials in the URL's userinfo are sent as basic
// authentication.
//
// # Connections
//
// With the sender's own client (Config.Client nil), a request to an
// http:// URL that no proxy serves (HTTP_PROXY, NO_PROXY) goes through the
// direct client: HTTP/1.1 on the calling goroutine, the request's head and
// body in one write, over a pool of kept-alive connections (at most 32
// idle, each for at most 90 s; dialing times out after 10 s). The call's
// deadline is the connection's, and the call's end (the node stopping, the
// lease lost) interrupts the dial, the write or the read at once; a
// connection whose call was interrupted is closed, never reused. A
// connection the receiver closed while it was idle is found before a
// request is written on it (a non-blocking look at the socket) and
// replaced by a new one. The answer's status line and headers may take 64
// KiB; 1xx answers before the final one are skipped; the body may be
// delimited by Content-Length, chunked encoding or the end of the
// connection, and the connection is reused when the answer allows it and
// its end was read (up to 64 KiB past what the sender reads is drained for
// that). The direct client reads an answer as net/http does (a fuzz test
// holds it to that), at about half of net/http's CPU per call on the
// node's side (BenchmarkCallNode).
//
// An https:// URL (TLS, and HTTP/2 when the receiver offers it), a proxy
// from the environment, static headers that net/http writes its own way
// (Host, Connection, framing headers) or refuses, and Config.NetHTTP
// (handler.client: net/http in the configuration file) go through the
// sender's net/http transport, with the same limits. Config.Client, when
// set, sends every request instead. No client follows redirects unless
// Config.Client does.
//
// Close closes the idle connections of the sender's own clients and stops
// the direct client's pool timer; the node's binary closes each sender
// after the node stopped.
//
// # Secrets
//
// Errors and logs name the URL without its userinfo, query string and
// fragment, and never include request headers.
package webhook
