package cli

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net/http"
	"strings"
	"testing"
	"time"

	"github.com/stretchr/testify/require"

	nodeactor "github.com/orderlyhq/orderly/actors/node"
	"github.com/orderlyhq/orderly/client"
	"github.com/orderlyhq/orderly/internal/testing/webtest"
	"github.com/orderlyhq/orderly/messages"
	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/persistence/redisstore"
	"github.com/orderlyhq/orderly/web"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// badJob is one bad job as each transport spells it; a nil spelling means
// the transport cannot express it (JSON has no NaN; a time.Duration does
// not reach 2^34 seconds).
type badJob struct {
	name  string
	field string // the field at fault
	// reason is what every transport reports.
	reason string
	http   string        // the job object of an HTTP request or a JSONL line
	actor  *messages.Job // an Enqueue message's job
	client *client.Job   // a Go client's job
	flags  []string      // orderly enqueue's flags after --queue and --id
	noID   bool          // flags give their own --id
}

// TestOneJobRuleEveryTransport feeds the same bad jobs through the HTTP
// API, the enqueue actor's decoding and store call, the Go client, and the
// CLI (flags and a JSONL file), and expects the same field and reason from
// each: one due-time rule and one validation (persistence), the
// transports only convert shapes.
func TestOneJobRuleEveryTransport(t *testing.T) {
	t.Parallel()
	const maxPayload = 16
	srv := webtest.NewServer(t, &web.Config{MaxPayloadBytes: maxPayload, Logger: slog.New(slog.DiscardHandler)},
		webtest.WithStore(func(c *redisstore.Config) { c.MaxPayloadBytes = maxPayload }))
	srv.Register("q", 2)
	ctx := context.Background()
	now := srv.Clock.Now()
	f := func(v float64) *float64 { return &v }
	long := strings.Repeat("x", persistence.MaxIDBytes+1)
	big := strings.Repeat("p", maxPayload+4) // 22 bytes as a JSON string
	const (
		timeRange = "out of range: must be unix seconds between 0 and 17179869184"
		inRange   = "out of range: the time would be after unix second 17179869184"
	)
	cases := []badJob{
		{name: "empty id", field: "id", reason: "must not be empty",
			http: `{"id": ""}`, actor: &messages.Job{Id: ""}, client: &client.Job{ID: ""},
			flags: []string{"--id", ""}, noID: true},
		{name: "id too long", field: "id", reason: "longer than 512 bytes (513)",
			http: `{"id": "` + long + `"}`, actor: &messages.Job{Id: long}, client: &client.Job{ID: long},
			flags: []string{"--id", long}, noID: true},
		{name: "perform_at before 1970", field: "perform_at", reason: timeRange,
			http: `{"id": "a", "perform_at": -1}`, actor: &messages.Job{Id: "a", PerformAt: f(-1)},
			client: &client.Job{ID: "a", PerformAt: time.Unix(-1, 0)}, flags: []string{"--perform-at", "-1"}},
		{name: "perform_at after 2^34", field: "perform_at", reason: timeRange,
			http: `{"id": "a", "perform_at": 17179869185}`, actor: &messages.Job{Id: "a", PerformAt: f(1<<34 + 1)},
			client: &client.Job{ID: "a", PerformAt: time.Unix(1<<34+1, 0)}, flags: []string{"--perform-at", "17179869185"}},
		{name: "perform_in negative", field: "perform_in", reason: "must not be negative",
			http: `{"id": "a", "perform_in": -1}`, actor: &messages.Job{Id: "a", PerformIn: f(-1)},
			client: &client.Job{ID: "a", PerformIn: -time.Second}, flags: []string{"--perform-in", "-1s"}},
		{name: "perform_in negative duration", field: "perform_in", reason: "must not be negative",
			http: `{"id": "a", "perform_in": "-1s"}`, actor: &messages.Job{Id: "a", PerformIn: f(-1)},
			client: &client.Job{ID: "a", PerformIn: -time.Second}, flags: []string{"--perform-in", "-1"}},
		{name: "perform_in past 2^34", field: "perform_in", reason: inRange,
			http: `{"id": "a", "perform_in": 17179869184}`, actor: &messages.Job{Id: "a", PerformIn: f(1 << 34)},
			flags: []string{"--perform-in", "17179869184"}},
		{name: "perform_at and perform_in", field: "perform_in", reason: "give perform_at or perform_in, not both",
			http: `{"id": "a", "perform_at": 1, "perform_in": 1}`, actor: &messages.Job{Id: "a", PerformAt: f(1), PerformIn: f(1)},
			client: &client.Job{ID: "a", PerformAt: now, PerformIn: time.Second}},
		{name: "score not finite", field: "score", reason: "must be a finite number",
			actor: &messages.Job{Id: "a", Score: f(math.NaN())}, client: &client.Job{ID: "a", Score: client.Score(math.Inf(1))},
			flags: []string{"--score", "NaN"}},
		{name: "payload over the node's limit", field: "payload", reason: "22 bytes, more than the limit of 16",
			http: `{"id": "a", "payload": "` + big + `"}`, actor: &messages.Job{Id: "a", Payload: []byte(`"` + big + `"`)},
			client: &client.Job{ID: "a", Payload: []byte(`"` + big + `"`)}, flags: []string{"--payload", `"` + big + `"`}},
	}
	// CLI flags check the pair with their own names: "give --perform-in or
	// --perform-at, not both" (TestEnqueueUsage).
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			path := "jobs[0]." + tc.field
			want := path + ": " + tc.reason
			if tc.http != "" { // the HTTP API
				res, err := srv.Client().Post(srv.URL+"/api/v1/queues/q/jobs", "application/json", strings.NewReader("["+tc.http+"]"))
				require.NoError(t, err)
				body, err := io.ReadAll(res.Body)
				res.Body.Close()
				require.NoError(t, err)
				require.Equal(t, http.StatusBadRequest, res.StatusCode, "%s", body)
				var ae apiv1.Error
				require.NoError(t, json.Unmarshal(body, &ae))
				require.Equal(t, apiv1.Error{Error: want, Field: path}, ae, "HTTP")
			}
			if tc.actor != nil { // the enqueue actor: decode, then the store
				m := &messages.Enqueue{Queue: "q", Jobs: []*messages.Job{tc.actor}}
				jobs, err := nodeactor.JobsFromMessage(m, now)
				if err == nil {
					err = srv.Store.Enqueue(ctx, "q", jobs)
				}
				require.Error(t, err, "actor")
				me := nodeactor.ErrorMessage(err, slog.New(slog.DiscardHandler))
				require.Equal(t, &messages.Error{Code: messages.Code_CODE_INVALID, Message: want, Field: path}, me, "actor")
			}
			if tc.client != nil { // the Go client
				c, err := client.NewFromStore(srv.Store, &client.Config{Now: srv.Clock.Now})
				require.NoError(t, err)
				err = c.Enqueue(ctx, "q", *tc.client)
				var fe *persistence.FieldError
				require.True(t, errors.As(err, &fe), "client: %v", err)
				require.Equal(t, path, fe.Path(), "client")
				require.Equal(t, tc.reason, fe.Reason, "client")
			}
			env := map[string]string{"ORDERLY_HTTP": srv.URL}
			if tc.flags != nil { // orderly enqueue with flags
				args := []string{"enqueue", "--queue", "q"}
				if !tc.noID {
					args = append(args, "--id", "a")
				}
				r := exec(runOpts{env: env}, append(args, tc.flags...)...)
				if tc.field == "payload" { // only the node knows its limit
					require.Equal(t, ExitError, r.code, r.stderr)
					require.Equal(t, fmt.Sprintf("orderly enqueue: %s (field %s; HTTP 400)\n", want, path), r.stderr)
				} else {
					require.Equal(t, ExitUsage, r.code, r.stderr)
					flag := "--" + strings.ReplaceAll(tc.field, "_", "-")
					require.Equal(t, fmt.Sprintf("orderly enqueue: %s: %s (see orderly enqueue --help)\n", flag, tc.reason), r.stderr)
				}
			}
			if tc.http != "" { // orderly enqueue --file: one JSONL line
				file := writeFile(t, "jobs.jsonl", tc.http+"\n")
				r := exec(runOpts{env: env}, "enqueue", "--queue", "q", "--file", file)
				require.Equal(t, ExitError, r.code, r.stderr)
				first, _, _ := strings.Cut(r.stderr, "\n")
				if tc.field == "payload" {
					require.Equal(t, fmt.Sprintf("orderly enqueue: %s:1: %s (field %s; HTTP 400)", file, want, path), first)
				} else {
					require.Equal(t, fmt.Sprintf("orderly enqueue: %s:1: %s: %s", file, tc.field, tc.reason), first)
				}
			}
		})
	}
	st, err := srv.Store.Stats(ctx, "q")
	require.NoError(t, err)
	require.Zero(t, st[0].Length, "no bad job was written")
}
