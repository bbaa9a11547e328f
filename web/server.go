package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"path"
	"runtime/debug"
	"strings"
	"time"

	"github.com/orderlyhq/orderly/persistence"
	"github.com/orderlyhq/orderly/web/apiv1"
)

// Defaults of Config.
const (
	// DefaultMaxBodyBytes is the default limit on a request body (8 MiB).
	DefaultMaxBodyBytes = 8 << 20
	// DefaultMaxConcurrentEnqueues is how many enqueue requests are decoded
	// and stored at once.
	DefaultMaxConcurrentEnqueues = 64
	// DefaultMaxFeedWaits is how many change-feed reads may wait for an
	// entry at once (GET /api/v1/queues/{q}/feed with wait): see
	// Config.MaxFeedWaits.
	DefaultMaxFeedWaits = 256
	// DefaultMaxBodyBytesInFlight bounds the bytes of request bodies held
	// at once (64 MiB, eight bodies of DefaultMaxBodyBytes).
	DefaultMaxBodyBytesInFlight = 64 << 20
	// DefaultBodyReadTimeout bounds the reading of one request body: 8 MiB
	// in 30 s is a client slower than 2.2 Mbit/s, beyond what an API client
	// on a working network needs, while a client that drips its body is
	// cut off long before it matters.
	DefaultBodyReadTimeout = 30 * time.Second
	// DefaultReadHeaderTimeout bounds the reading of a request's header,
	// and of a TLS handshake (Serve).
	DefaultReadHeaderTimeout = 10 * time.Second
	// DefaultIdleTimeout is how long a keep-alive connection may wait for
	// its next request (Serve). It is longer than the 90 s Go's HTTP client
	// keeps an idle connection, so that a Go client, not the server, closes
	// it first and never sends a request on a connection being closed.
	DefaultIdleTimeout = 120 * time.Second
	// DefaultMaxConnections is how many connections Serve keeps open at
	// once. Each takes a file descriptor; keep the process's limit above
	// it, with room for Redis, gossip and webhook connections.
	DefaultMaxConnections = 1024
)

// readyTimeout bounds one readiness check.
const readyTimeout = 2 * time.Second

// Config configures a Server. The zero value of each optional field means
// its default, in brackets.
type Config struct {
	// Store is the durable queue the API reads and changes. Required.
	Store persistence.Store
	// Ready reports whether the node is ready to serve (/readyz): nil means
	// ready, an error's text is the reason it is not. [the store answers
	// Ping]
	Ready func(ctx context.Context) error
	// Logger receives the server's logs: store failures and panics.
	// [slog.Default()]
	Logger *slog.Logger
	// MaxBodyBytes limits a request body; larger bodies are answered 413.
	// [DefaultMaxBodyBytes, 8 MiB]
	MaxBodyBytes int64
	// MaxConcurrentEnqueues bounds the enqueue requests decoded and stored
	// at once; a request takes its slot once its body is read, and waits up
	// to 10 s for one before it is answered 503.
	// [DefaultMaxConcurrentEnqueues]
	MaxConcurrentEnqueues int
	// MaxFeedWaits bounds the change-feed long polls (GET
	// /api/v1/queues/{q}/feed with wait > 0) waiting at once on this
	// server; one more is answered 429 with Retry-After at once. A reader
	// without wait is never refused. [DefaultMaxFeedWaits]
	MaxFeedWaits int
	// MaxBodyBytesInFlight bounds the bytes of request bodies held in
	// memory at once, counted as they arrive, so a client that is slow to
	// send its body holds only what it sent. A request whose next bytes do
	// not fit waits up to 10 s, then is answered 503. It must be at least
	// MaxBodyBytes. [DefaultMaxBodyBytesInFlight, or MaxBodyBytes if that
	// is larger]
	MaxBodyBytesInFlight int64
	// BodyReadTimeout bounds the reading of one request body, from the end
	// of its header; a body not in by then is answered 408 and its
	// connection closed. [DefaultBodyReadTimeout]
	BodyReadTimeout time.Duration
	// MaxPayloadBytes limits one payload's stored size; it should match the
	// store's limit. [persistence.DefaultMaxPayloadBytes]
	MaxPayloadBytes int
	// Now reads the clock that perform_in counts from. [time.Now]
	Now func() time.Time
	// Token, when set, is the bearer token every request must present
	// ("Authorization: Bearer <token>"), except the probes /healthz and
	// /readyz and the dashboard's static files (UI). [none: no
	// authentication]
	Token string
	// ReadToken, when set, is a second bearer token that opens only what
	// changes nothing: every GET and HEAD of the API, /metrics and the
	// dashboard's views. A request that would change state with it is
	// answered 403. It needs Token, and must differ from it. [none]
	ReadToken string
	// PublicReads exempts GET and HEAD requests from Token; requests that
	// change something always need it.
	PublicReads bool
	// Members returns this node's name and the cluster's members as it
	// sees them (/api/v1/cluster). [none: an empty member list]
	Members func(ctx context.Context) (self string, members []apiv1.Member)
	// Metrics serves GET /metrics, the node's Prometheus handler. It needs
	// the token like the other reads. [none: /metrics answers 404]
	Metrics http.Handler
	// SetPaused pauses or resumes a queue (POST /api/v1/queues/{q}/pause,
	// /resume): the node's PauseQueue and ResumeQueue, so that the node
	// serving the API sees the change at once. [Store.SetPaused: every
	// node sees it within its control poll]
	SetPaused func(ctx context.Context, queue string, paused bool) error
	// Quiet makes the node serving the API quiet (true) or resumes it
	// (false): POST /api/v1/node/quiet and /resume. IsQuiet reports its
	// state (GET /api/v1/cluster's "quiet"). [none: those endpoints
	// answer 404]
	Quiet   func(ctx context.Context, quiet bool) error
	IsQuiet func() bool
	// Periodic lists the node's periodic jobs (GET /api/v1/periodic).
	// [none: an empty list]
	Periodic func(ctx context.Context) ([]apiv1.Periodic, error)
	// EmbeddedStore tells GET /api/v1/cluster, and so the dashboard, that
	// the store is the embedded in-memory one. [false]
	EmbeddedStore bool
	// UI serves the dashboard: GET and HEAD of every path outside /api/,
	// /metrics, /healthz and /readyz. It is reached without the token, so
	// it must serve only static files that hold no data; the dashboard's
	// script sends the token on its API calls. [none: 404]
	UI http.Handler
	// AllowedHosts are the host names (or addresses), without port, that
	// requests may name in their Host header besides localhost, loopback
	// addresses and the address the request arrived on, when no Token
	// protects the server (or PublicReads is set): the names of a proxy in
	// front, say. Other names are answered 421, which keeps a web page
	// whose name rebinds to this address (DNS rebinding) from reading or
	// changing anything. AnyHost ("*") accepts every name. [none]
	AllowedHosts []string

	// BasePath, when set, is the path under which the server answers
	// ("/orderly": /orderly/api/v1/queues, /orderly/metrics, the
	// dashboard at /orderly/), for a proxy that forwards a sub-path of its
	// own with the path unchanged. It starts with '/' and has no trailing
	// one; its segments are made of letters, digits, '-', '.', '_' and
	// '~'. Other paths are answered 404, except the probes /healthz and
	// /readyz, which also answer at the root. UI must then be
	// ui.HandlerAt(BasePath). [none: the root]
	BasePath string

	// StateQueues are the stateful queues (docs/contract.md §11) whose
	// state GET and PUT /api/v1/queues/{q}/state/{id} read and write, each
	// with its max_state_bytes (0: the default). Other queues answer 404
	// there. [none]
	StateQueues map[string]int

	// QueueLimits are the max_concurrency and rate_limit of the queues
	// this node serves (docs/contract.md §9), shown in GET /api/v1/queues
	// and /api/v1/queues/{q}: they are the nodes' configuration, not kept
	// in the store. [none: no limit shown]
	QueueLimits map[string]apiv1.QueueLimits

	// Pull serves the pull routes of the node's pull queues
	// (docs/contract.md §6.6): POST /api/v1/queues/{q}/pull and its
	// lease's answer and extend. [none: those answer 404]
	Pull Puller
	// WorkerTokens are per-queue bearer tokens (queue name to token) that
	// open only the pull routes of their queue; any other request with one
	// is answered 403. Each must differ from Token and ReadToken. [none]
	WorkerTokens map[string]string

	// History reads the queues' per-minute history for GET
	// /api/v1/queues/{q}/history and /api/v1/history (the binary keeps it in
	// Redis, one sample a minute per queue). [none: those answer 404]
	History HistoryReader

	// The fields below apply to Serve: a Server mounted on an http.Server
	// of the caller's gets the per-request limits above, and the caller
	// sets its own timeouts.

	// ReadHeaderTimeout bounds the reading of a request's header, and of
	// the TLS handshake. [DefaultReadHeaderTimeout]
	ReadHeaderTimeout time.Duration
	// IdleTimeout is how long a keep-alive connection may wait for its
	// next request. [DefaultIdleTimeout]
	IdleTimeout time.Duration
	// MaxConnections bounds the connections open at once. At the limit,
	// the idle keep-alive connection that waited longest and never
	// presented the token is closed to make room; when there is none, new
	// connections wait in the listen queue until one closes, while those
	// already open keep being served (see Serve). [DefaultMaxConnections]
	MaxConnections int
	// TLS, when set, makes Serve serve HTTPS (and HTTP/2) with this
	// configuration; it needs a certificate. [none: plain HTTP]
	TLS *tls.Config
}

// Server is Orderly's HTTP API. It implements http.Handler; every answer,
// errors included, is JSON, except those of Config.Metrics and Config.UI.
// Create it with New.
type Server struct {
	store        persistence.Store
	ready        func(context.Context) error
	log          *slog.Logger
	maxBody      int64
	maxPayload   int
	now          func() time.Time
	tokenSum     *[sha256.Size]byte // nil when no token is required
	readSum      *[sha256.Size]byte // of the read-only token; nil when none
	publicReads  bool
	origin       *http.CrossOriginProtection
	mux          *http.ServeMux
	members      func(context.Context) (string, []apiv1.Member)
	metrics      http.Handler
	ui           http.Handler
	embedded     bool
	stateQueues  map[string]int
	queueLimits  map[string]apiv1.QueueLimits
	history      HistoryReader
	puller       Puller
	workerSums   map[[sha256.Size]byte]string                               // worker token hash -> its queue
	pause        func(ctx context.Context, queue string, paused bool) error // Config.SetPaused, or nil
	listPeriodic func(ctx context.Context) ([]apiv1.Periodic, error)        // Config.Periodic, or nil
	quiet        func(ctx context.Context, quiet bool) error                // Config.Quiet, or nil
	isQuiet      func() bool                                                // Config.IsQuiet, or nil
	// enqueueSlots holds a token per enqueue request being decoded and
	// stored.
	enqueueSlots chan struct{}
	// feedWaits holds a token per change-feed long poll waiting.
	feedWaits   chan struct{}
	bodies      *budget // bytes of request bodies held
	bodyTimeout time.Duration
	hosts       hostCheck
	base        string // Config.BasePath
	conns       *conns // Serve's connections
	// patterns are the patterns of the routes, in the order registered
	// (for the tests that compare them with the OpenAPI document).
	patterns []string
}

// New returns a Server on cfg.Store.
func New(cfg *Config) (*Server, error) {
	if cfg == nil || cfg.Store == nil {
		return nil, errors.New("web: Config.Store is required")
	}
	if cfg.MaxBodyBytes < 0 || cfg.MaxPayloadBytes < 0 || cfg.MaxBodyBytesInFlight < 0 {
		return nil, errors.New("web: MaxBodyBytes, MaxBodyBytesInFlight and MaxPayloadBytes must not be negative")
	}
	if cfg.BodyReadTimeout < 0 || cfg.ReadHeaderTimeout < 0 || cfg.IdleTimeout < 0 || cfg.MaxConnections < 0 {
		return nil, errors.New("web: BodyReadTimeout, ReadHeaderTimeout, IdleTimeout and MaxConnections must not be negative")
	}
	hosts, err := newHostCheck(cfg)
	if err != nil {
		return nil, err
	}
	if err := ValidateBasePath(cfg.BasePath); err != nil {
		return nil, fmt.Errorf("web: BasePath: %w", err)
	}
	s := &Server{
		store:        cfg.Store,
		ready:        cfg.Ready,
		log:          cfg.Logger,
		maxBody:      cfg.MaxBodyBytes,
		maxPayload:   cfg.MaxPayloadBytes,
		now:          cfg.Now,
		publicReads:  cfg.PublicReads,
		members:      cfg.Members,
		metrics:      cfg.Metrics,
		ui:           cfg.UI,
		embedded:     cfg.EmbeddedStore,
		stateQueues:  cfg.StateQueues,
		queueLimits:  cfg.QueueLimits,
		history:      cfg.History,
		puller:       cfg.Pull,
		pause:        cfg.SetPaused,
		listPeriodic: cfg.Periodic,
		quiet:        cfg.Quiet,
		isQuiet:      cfg.IsQuiet,
		origin:       http.NewCrossOriginProtection(),
		mux:          http.NewServeMux(),
		bodyTimeout:  cfg.BodyReadTimeout,
		hosts:        hosts,
		base:         cfg.BasePath,
	}
	if err := s.limits(cfg); err != nil {
		return nil, err
	}
	if err := s.tokens(cfg); err != nil {
		return nil, err
	}
	s.routes()
	s.conns = newConns(cfg, s, s.log)
	return s, nil
}

// limits applies the defaults of the server's limits and checks them.
func (s *Server) limits(cfg *Config) error {
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	inFlight := cfg.MaxBodyBytesInFlight
	if inFlight == 0 {
		inFlight = max(DefaultMaxBodyBytesInFlight, s.maxBody)
	}
	if inFlight < s.maxBody {
		return fmt.Errorf("web: MaxBodyBytesInFlight (%d) must be at least MaxBodyBytes (%d)", inFlight, s.maxBody)
	}
	s.bodies = newBudget(inFlight)
	if s.bodyTimeout == 0 {
		s.bodyTimeout = DefaultBodyReadTimeout
	}
	slots := cfg.MaxConcurrentEnqueues
	if slots <= 0 {
		slots = DefaultMaxConcurrentEnqueues
	}
	s.enqueueSlots = make(chan struct{}, slots)
	waits := cfg.MaxFeedWaits
	if waits <= 0 {
		waits = DefaultMaxFeedWaits
	}
	s.feedWaits = make(chan struct{}, waits)
	if s.maxPayload == 0 {
		s.maxPayload = persistence.DefaultMaxPayloadBytes
	}
	if s.now == nil {
		s.now = time.Now
	}
	return nil
}

// tokens keeps the hashes of the write and read tokens, and checks that
// they make sense together.
func (s *Server) tokens(cfg *Config) error {
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		s.tokenSum = &sum
	}
	if cfg.ReadToken != "" {
		if cfg.Token == "" {
			return errors.New("web: ReadToken needs Token: without it every request is allowed")
		}
		if cfg.ReadToken == cfg.Token {
			return errors.New("web: ReadToken must differ from Token")
		}
		sum := sha256.Sum256([]byte(cfg.ReadToken))
		s.readSum = &sum
	}
	for queue, token := range cfg.WorkerTokens {
		if token == "" || token == cfg.Token || token == cfg.ReadToken {
			return fmt.Errorf("web: the worker token of queue %q must be set and differ from Token and ReadToken", queue)
		}
		if s.workerSums == nil {
			s.workerSums = map[[sha256.Size]byte]string{}
		}
		s.workerSums[sha256.Sum256([]byte(token))] = queue
	}
	return nil
}

// workerQueue returns the queue whose worker token r presents.
func (s *Server) workerQueue(r *http.Request) (string, bool) {
	if len(s.workerSums) == 0 {
		return "", false
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return "", false
	}
	q, ok := s.workerSums[sha256.Sum256([]byte(strings.TrimSpace(token)))]
	return q, ok
}

// routes registers the API's routes.
func (s *Server) routes() {
	s.handle("GET /api/v1/queues", s.listQueues)
	s.handle("GET /api/v1/queues/{q}", s.getQueue)
	s.handle("GET /api/v1/queues/{q}/jobs", s.listJobs)
	s.handle("POST /api/v1/queues/{q}/jobs", s.enqueue)
	s.handle("GET /api/v1/queues/{q}/jobs/{id...}", s.getJob)
	s.handle("DELETE /api/v1/queues/{q}/jobs/{id...}", s.deleteJob)
	s.handle("POST /api/v1/queues/{q}/jobs/{rest...}", s.jobAction)
	s.handle("GET /api/v1/queues/{q}/processing", s.processing)
	s.handle("POST /api/v1/queues/{q}/actions/{action}", s.queueAction)
	s.handle("POST /api/v1/node/quiet", s.setQuiet(true))
	s.handle("POST /api/v1/node/resume", s.setQuiet(false))
	s.handle("POST /api/v1/queues/{q}/pause", s.setPaused(true))
	s.handle("POST /api/v1/queues/{q}/resume", s.setPaused(false))
	s.handle("POST /api/v1/queues/{q}/reshard", s.reshard)
	s.handle("GET /api/v1/periodic", s.periodic)
	s.handle("GET /api/v1/queues/{q}/morgue", s.listMorgue)
	s.handle("GET /api/v1/queues/{q}/finished", s.listFinished)
	s.handle("POST /api/v1/queues/{q}/morgue/requeue", s.requeueMorgue)
	s.handle("POST /api/v1/queues/{q}/morgue/delete", s.deleteMorgue)
	s.handle("GET /api/v1/queues/{q}/state/{id...}", s.getState)
	s.handle("PUT /api/v1/queues/{q}/state/{id...}", s.putState)
	s.handle("GET /api/v1/queues/{q}/feed", s.getFeed)
	s.handle("GET /api/v1/stats", s.stats)
	s.handle("GET /api/v1/queues/{q}/history", s.queueHistory)
	s.handle("GET /api/v1/history", s.allHistory)
	s.handle("GET /api/v1/cluster", s.cluster)
	s.handle("GET /api/v1/access", s.access)
	s.handle("GET "+openAPIPath, s.openAPI)
	s.handle("GET /metrics", s.serveMetrics)
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	s.pullRoutes()
}

// route is a handler of the server: fn returns its error and ServeHTTP
// writes it. The type tells the server's routes from the answers the mux
// would make itself (not found, method not allowed, redirects).
type route struct {
	s  *Server
	fn func(http.ResponseWriter, *http.Request) error
}

func (rt *route) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	defer rt.s.recoverPanic(w, r)
	if err := rt.fn(w, r); err != nil {
		rt.s.writeError(w, r, err)
	}
}

func (s *Server) handle(pattern string, fn func(http.ResponseWriter, *http.Request) error) {
	s.patterns = append(s.patterns, pattern)
	s.mux.Handle(pattern, &route{s: s, fn: fn})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	w, r, done := s.guardBody(w, r)
	defer done()
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if !s.hosts.allows(r) {
		h.Set("Cache-Control", "no-store")
		s.writeError(w, r, misdirected(r))
		return
	}
	if s.base != "" {
		var ok bool
		if r, ok = s.underBase(r); !ok {
			h.Set("Cache-Control", "no-store")
			s.writeError(w, r, &apiError{status: http.StatusNotFound,
				msg: fmt.Sprintf("no endpoint at %s: this server answers under %s/", r.URL.EscapedPath(), s.base)})
			return
		}
	}
	if s.ui != nil && isUIPath(r) {
		s.serveUI(w, r) // caching is the dashboard's to decide
		return
	}
	h.Set("Cache-Control", "no-store")

	if err := s.origin.Check(r); err != nil {
		s.writeError(w, r, &apiError{status: http.StatusForbidden, msg: "cross-origin request rejected"})
		return
	}
	switch s.authorize(r) {
	case accessNone:
		if queue, ok := s.workerQueue(r); ok {
			if !workerRoute(r, queue) {
				s.writeError(w, r, &apiError{status: http.StatusForbidden,
					msg: fmt.Sprintf("worker token of queue %s: it opens only that queue's pull routes", queue)})
				return
			}
			break
		}
		h.Set("WWW-Authenticate", `Bearer realm="orderly"`)
		s.writeError(w, r, &apiError{status: http.StatusUnauthorized, msg: "missing or invalid bearer token"})
		return
	case accessRead:
		if !isRead(r) {
			s.writeError(w, r, &apiError{status: http.StatusForbidden,
				msg: fmt.Sprintf("read-only access: %s %s changes state and needs the full token (http_token)", r.Method, r.URL.EscapedPath())})
			return
		}
	}
	if handler, _ := s.mux.Handler(r); !isRoute(handler) {
		s.writeError(w, r, s.noRoute(r))
		return
	}
	s.mux.ServeHTTP(w, r) // matches again, setting the path values
}

func isRoute(h http.Handler) bool {
	_, ok := h.(*route)
	return ok
}

// noRoute explains why no route serves r: a path that is not canonical
// (the mux would redirect it, possibly to another job id), a method the
// path does not take (405 with Allow), or no such endpoint.
func (s *Server) noRoute(r *http.Request) error {
	p := r.URL.EscapedPath()
	if clean := cleanPath(p); clean != p {
		return &apiError{status: http.StatusNotFound,
			msg: fmt.Sprintf("no endpoint at %s: the path is not canonical (%s); escape '/' in ids as %%2F", p, clean)}
	}
	var allow []string
	for _, m := range []string{http.MethodGet, http.MethodHead, http.MethodPost, http.MethodPut, http.MethodPatch, http.MethodDelete} {
		probe := r.WithContext(r.Context())
		probe.Method = m
		if h, _ := s.mux.Handler(probe); isRoute(h) {
			allow = append(allow, m)
		}
	}
	if len(allow) > 0 {
		return &apiError{status: http.StatusMethodNotAllowed, allow: strings.Join(allow, ", "),
			msg: fmt.Sprintf("method %s is not allowed on %s (allowed: %s)", r.Method, p, strings.Join(allow, ", "))}
	}
	return &apiError{status: http.StatusNotFound, msg: fmt.Sprintf("no endpoint %s %s", r.Method, p)}
}

// cleanPath is the canonical form of an escaped path, as http.ServeMux
// computes it.
func cleanPath(p string) string {
	if p == "" {
		return "/"
	}
	if p[0] != '/' {
		p = "/" + p
	}
	np := path.Clean(p)
	if p[len(p)-1] == '/' && np != "/" {
		np += "/"
	}
	return np
}

// isUIPath reports whether r is for the dashboard: a canonical path
// outside the API, /metrics and the probes.
func isUIPath(r *http.Request) bool {
	p := r.URL.Path
	switch {
	case p == "/api" || strings.HasPrefix(p, "/api/"):
		return false
	case p == "/metrics" || p == "/healthz" || p == "/readyz":
		return false
	}
	return cleanPath(r.URL.EscapedPath()) == r.URL.EscapedPath()
}

// serveUI hands a dashboard request to Config.UI, without the token: GET
// and HEAD only, as the dashboard's files are read, never changed.
func (s *Server) serveUI(w http.ResponseWriter, r *http.Request) {
	defer s.recoverPanic(w, r)
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		s.writeError(w, r, &apiError{status: http.StatusMethodNotAllowed, allow: "GET, HEAD",
			msg: fmt.Sprintf("method %s is not allowed on %s (allowed: GET, HEAD)", r.Method, r.URL.EscapedPath())})
		return
	}
	s.ui.ServeHTTP(w, r)
}

// serveMetrics serves GET /metrics with Config.Metrics.
func (s *Server) serveMetrics(w http.ResponseWriter, r *http.Request) error {
	if s.metrics == nil {
		return &apiError{status: http.StatusNotFound, msg: "no metrics: this server has no Prometheus handler"}
	}
	s.metrics.ServeHTTP(w, r)
	return nil
}

// access is what a request may do.
type access int

const (
	accessNone access = iota // nothing but the probes
	accessRead               // reads only
	accessFull               // everything
)

// isRead reports whether r changes nothing: GET and HEAD.
func isRead(r *http.Request) bool {
	return r.Method == http.MethodGet || r.Method == http.MethodHead
}

// authorize returns what r may do: everything when no token is configured
// or r presents Token; reads when r presents ReadToken, or when it presents
// nothing and reads are public; the probes whatever r presents.
func (s *Server) authorize(r *http.Request) access {
	if s.tokenSum == nil {
		return accessFull
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if ok && strings.EqualFold(scheme, "Bearer") {
		sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
		if subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1 {
			trust(r)
			return accessFull
		}
		if s.readSum != nil && subtle.ConstantTimeCompare(sum[:], s.readSum[:]) == 1 {
			trust(r)
			return accessRead
		}
	}
	if r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return accessFull // the probes are open; they change nothing
	}
	if r.URL.Path == openAPIPath && isRead(r) {
		return accessRead // the document is public: it is the repository's
	}
	if s.publicReads && isRead(r) {
		return accessRead
	}
	return accessNone
}

// access serves GET /api/v1/access: what the caller's credentials allow,
// so that the dashboard shows only the actions it can perform.
func (s *Server) access(w http.ResponseWriter, r *http.Request) error {
	if _, err := queryParams(r); err != nil {
		return err
	}
	s.writeJSON(w, r, http.StatusOK, apiv1.Access{Write: s.authorize(r) == accessFull, TokenRequired: s.tokenSum != nil})
	return nil
}

// recoverPanic turns a handler's panic into a logged 500.
func (s *Server) recoverPanic(w http.ResponseWriter, r *http.Request) {
	v := recover()
	if v == nil {
		return
	}
	if v == http.ErrAbortHandler {
		panic(v)
	}
	s.log.Error("web: handler panicked", append(s.requestAttrs(r, fmt.Errorf("panic: %v", v)),
		slog.String("stack", string(debug.Stack())))...)
	s.writeError(w, r, &apiError{status: http.StatusInternalServerError, msg: msgInternal})
}
