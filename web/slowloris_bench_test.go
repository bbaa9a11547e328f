package web_test

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/orderlyhq/orderly/web"
)

// BenchmarkNewConnectionUnderSlowloris measures how long a new client waits
// for an answer to GET /healthz (dial, request, answer) while a slowloris
// attacker holds every connection the server allows (MaxConnections): each
// of its connections sends half a request header and nothing more, and is
// opened again as soon as the server closes it. The header timeout is the
// default (10 s), as on a node. It reports the median and the slowest
// wait; run it with a few iterations:
//
//	go test -run '^$' -bench NewConnectionUnderSlowloris -benchtime 20x ./web/
func BenchmarkNewConnectionUnderSlowloris(b *testing.B) {
	for _, limit := range []int{64, 512} {
		b.Run(fmt.Sprintf("limit=%d", limit), func(b *testing.B) {
			srv, err := web.New(&web.Config{Store: discardStore{}, MaxConnections: limit})
			if err != nil {
				b.Fatal(err)
			}
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			go func() { _ = srv.Serve(ln) }()
			defer srv.Close()
			addr := ln.Addr().String()
			stop := make(chan struct{})
			var wg sync.WaitGroup
			defer wg.Wait()
			defer close(stop)
			for range limit {
				wg.Go(func() { slowloris(addr, stop) })
			}
			time.Sleep(time.Second) // let the attacker fill the server
			waits := make([]time.Duration, 0, b.N)
			for b.Loop() {
				start := time.Now()
				if err := healthz(addr); err != nil {
					b.Fatal(err)
				}
				waits = append(waits, time.Since(start))
			}
			slices.Sort(waits)
			b.ReportMetric(float64(waits[len(waits)/2].Microseconds())/1000, "median-ms")
			b.ReportMetric(float64(waits[len(waits)-1].Microseconds())/1000, "max-ms")
		})
	}
}

// slowloris holds one connection to addr with an unfinished request header,
// opening another whenever the server closes it, until stop is closed.
func slowloris(addr string, stop <-chan struct{}) {
	for {
		select {
		case <-stop:
			return
		default:
		}
		c, err := net.Dial("tcp", addr)
		if err != nil {
			time.Sleep(10 * time.Millisecond)
			continue
		}
		go func() { <-stop; c.Close() }()
		_, _ = io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nX-Slow: ")
		_, _ = io.Copy(io.Discard, c) // until the server closes it
		c.Close()
	}
}

// healthz sends GET /healthz on a new connection and reads its answer.
func healthz(addr string) error {
	c, err := net.Dial("tcp", addr)
	if err != nil {
		return err
	}
	defer c.Close()
	if err := c.SetDeadline(time.Now().Add(time.Minute)); err != nil {
		return err
	}
	if _, err := io.WriteString(c, "GET /healthz HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n"); err != nil {
		return err
	}
	res, err := http.ReadResponse(bufio.NewReader(c), nil)
	if err != nil {
		return err
	}
	defer res.Body.Close()
	if res.StatusCode != http.StatusOK {
		return fmt.Errorf("GET /healthz: %s", res.Status)
	}
	return nil
}
