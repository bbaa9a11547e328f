// Command remote-enqueue enqueues a job into a running Orderly cluster by
// actor message: it sends messages.Enqueue to the well-known "enqueue" actor
// of a node through protoactor remote and prints the EnqueueResult.
//
// Start a node with an actor address, then enqueue:
//
//	orderly --redis redis://127.0.0.1:6379/0 --actor-addr 127.0.0.1:8090
//	go run ./examples/remote-enqueue --actor 127.0.0.1:8090 --queue default --id order-1 --payload '{"state":"paid"}'
//
// Without --actor it asks a node's HTTP API (--http) for a member that
// advertises an actor address. A node started with --actor-token refuses
// clients without it: pass the same token with --token (or
// ORDERLY_ACTOR_TOKEN), which this process presents in gRPC metadata
// (orderly.ActorCredentials). A node started with --actor-tls-cert,
// --actor-tls-key and --actor-tls-ca serves mutual TLS: pass a certificate
// its CA signed with --tls-cert and --tls-key, and that CA with --tls-ca
// (orderly.LoadActorTLS); this process then serves and dials TLS too, as the
// node sends its answer back over a connection of its own.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/asynkron/protoactor-go/actor"
	"github.com/asynkron/protoactor-go/remote"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/credentials/insecure"

	"github.com/orderlyhq/orderly"
	"github.com/orderlyhq/orderly/messages"
)

func main() {
	if err := run(os.Args[1:], os.Stdout); err != nil {
		fmt.Fprintln(os.Stderr, "remote-enqueue:", err)
		os.Exit(1)
	}
}

func run(args []string, out io.Writer) error {
	fs := flag.NewFlagSet("remote-enqueue", flag.ContinueOnError)
	actorAddr := fs.String("actor", "", "actor address (host:port) of a node; empty asks --http for one")
	httpAddr := fs.String("http", "127.0.0.1:8080", "HTTP address of a node, to find an actor address")
	queue := fs.String("queue", "default", "queue")
	id := fs.String("id", "", "job id (required)")
	payload := fs.String("payload", "", "payload")
	timeout := fs.Duration("timeout", 5*time.Second, "how long to wait for the answer")
	token := fs.String("token", os.Getenv("ORDERLY_ACTOR_TOKEN"), "the node's actor_token, if it has one [env ORDERLY_ACTOR_TOKEN]")
	tlsCert := fs.String("tls-cert", "", "PEM client certificate, for a node that serves mutual TLS (with --tls-key and --tls-ca)")
	tlsKey := fs.String("tls-key", "", "PEM private key of --tls-cert")
	tlsCA := fs.String("tls-ca", "", "PEM CA certificate that signs the node's certificate")
	headers := map[string]string{}
	fs.Func("header", "a header of the payload, K=V (repeatable)", func(v string) error {
		k, val, ok := strings.Cut(v, "=")
		if !ok {
			return fmt.Errorf("%q: give K=V", v)
		}
		headers[k] = val
		return nil
	})
	if err := fs.Parse(args); err != nil {
		return err
	}
	if *id == "" {
		return errors.New("--id is required")
	}
	if *actorAddr == "" {
		addr, err := findActor(*httpAddr)
		if err != nil {
			return err
		}
		*actorAddr = addr
	}

	// This process needs its own remote endpoint to receive the answer.
	sys := actor.NewActorSystem(actor.WithLoggerFactory(func(*actor.ActorSystem) *slog.Logger {
		return slog.New(slog.DiscardHandler)
	}))
	opts := []remote.ConfigOption{remote.WithEndpointWriterQueueSize(1024), remote.WithEndpointManagerQueueSize(1024)}
	var transport credentials.TransportCredentials = insecure.NewCredentials()
	if *tlsCert != "" || *tlsKey != "" || *tlsCA != "" {
		cfg, err := orderly.LoadActorTLS(*tlsCert, *tlsKey, *tlsCA)
		if err != nil {
			return err
		}
		transport = credentials.NewTLS(cfg)
		// The node answers over a connection it opens to this process.
		opts = append(opts, remote.WithServerOptions(grpc.Creds(transport)))
	}
	dial := []grpc.DialOption{grpc.WithTransportCredentials(transport)}
	if *token != "" {
		dial = append(dial, grpc.WithPerRPCCredentials(orderly.ActorCredentials(*token)))
	}
	opts = append(opts, remote.WithDialOptions(dial...))
	r := remote.NewRemote(sys, remote.Configure("127.0.0.1", 0, opts...))
	r.Start()
	// Without an answer there is nothing left to hand over, and a graceful
	// stop would wait up to 10 s for the connection the node left open (a
	// node that refuses a caller answers nothing): stop at once then.
	answered := false
	defer func() { r.Shutdown(answered) }()

	enqueue := actor.NewPID(*actorAddr, "enqueue")
	res, err := sys.Root.RequestFuture(enqueue, &messages.Enqueue{
		Queue: *queue,
		Jobs:  []*messages.Job{{Id: *id, Payload: []byte(*payload), Headers: headers}},
	}, *timeout).Result()
	if err != nil {
		return fmt.Errorf("no answer from %s: %w", *actorAddr, err)
	}
	answered = true
	result, ok := res.(*messages.EnqueueResult)
	if !ok {
		return fmt.Errorf("unexpected answer %T", res)
	}
	if e := result.GetError(); e != nil {
		return fmt.Errorf("%s: %s (field %q)", e.GetCode(), e.GetMessage(), e.GetField())
	}
	fmt.Fprintf(out, "enqueued %d job(s) into %s through %s\n", result.GetEnqueued(), *queue, *actorAddr)
	return nil
}

// findActor asks a node's HTTP API for a member with an actor address.
func findActor(httpAddr string) (string, error) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, "GET", "http://"+httpAddr+"/api/v1/cluster", nil)
	if err != nil {
		return "", err
	}
	res, err := http.DefaultClient.Do(req)
	if err != nil {
		return "", fmt.Errorf("asking %s for an actor address: %w", httpAddr, err)
	}
	defer res.Body.Close()
	var view struct {
		Members []struct {
			State string `json:"state"`
			Actor string `json:"actor"`
		} `json:"members"`
	}
	if err := json.NewDecoder(res.Body).Decode(&view); err != nil {
		return "", fmt.Errorf("reading %s's cluster view: %w", httpAddr, err)
	}
	for _, m := range view.Members {
		if m.State == "alive" && m.Actor != "" {
			return m.Actor, nil
		}
	}
	return "", errors.New("no alive member advertises an actor address (start nodes with --actor-addr)")
}
