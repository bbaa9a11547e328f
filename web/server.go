package web

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
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

// DefaultMaxBodyBytes is the default limit on a request body.
const DefaultMaxBodyBytes = 8 << 20

// DefaultMaxConcurrentEnqueues is how many enqueue requests are read and
// handled at once by default.
const DefaultMaxConcurrentEnqueues = 64

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
	// MaxConcurrentEnqueues bounds the enqueue requests handled at once
	// (so the memory their bodies take is bounded by it times
	// MaxBodyBytes); others wait for a slot. [DefaultMaxConcurrentEnqueues]
	MaxConcurrentEnqueues int
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
	// PublicReads exempts GET and HEAD requests from Token; requests that
	// change something always need it.
	PublicReads bool
	// Members returns this node's name and the cluster's members as it
	// sees them (/api/v1/cluster). [none: an empty member list]
	Members func(ctx context.Context) (self string, members []apiv1.Member)
	// Metrics serves GET /metrics, the node's Prometheus handler. It needs
	// the token like the other reads. [none: /metrics answers 404]
	Metrics http.Handler
	// UI serves the dashboard: GET and HEAD of every path outside /api/,
	// /metrics, /healthz and /readyz. It is reached without the token, so
	// it must serve only static files that hold no data; the dashboard's
	// script sends the token on its API calls. [none: 404]
	UI http.Handler
}

// Server is Orderly's HTTP API. It implements http.Handler; every answer,
// errors included, is JSON, except those of Config.Metrics and Config.UI.
// Create it with New.
type Server struct {
	store       persistence.Store
	ready       func(context.Context) error
	log         *slog.Logger
	maxBody     int64
	maxPayload  int
	now         func() time.Time
	tokenSum    *[sha256.Size]byte // nil when no token is required
	publicReads bool
	origin      *http.CrossOriginProtection
	mux         *http.ServeMux
	members     func(context.Context) (string, []apiv1.Member)
	metrics     http.Handler
	ui          http.Handler
	// enqueueSlots holds a token per enqueue request being handled.
	enqueueSlots chan struct{}
}

// New returns a Server on cfg.Store.
func New(cfg *Config) (*Server, error) {
	if cfg == nil || cfg.Store == nil {
		return nil, errors.New("web: Config.Store is required")
	}
	if cfg.MaxBodyBytes < 0 || cfg.MaxPayloadBytes < 0 {
		return nil, errors.New("web: MaxBodyBytes and MaxPayloadBytes must not be negative")
	}
	s := &Server{
		store:       cfg.Store,
		ready:       cfg.Ready,
		log:         cfg.Logger,
		maxBody:     cfg.MaxBodyBytes,
		maxPayload:  cfg.MaxPayloadBytes,
		now:         cfg.Now,
		publicReads: cfg.PublicReads,
		members:     cfg.Members,
		metrics:     cfg.Metrics,
		ui:          cfg.UI,
		origin:      http.NewCrossOriginProtection(),
		mux:         http.NewServeMux(),
	}
	if s.log == nil {
		s.log = slog.Default()
	}
	if s.maxBody == 0 {
		s.maxBody = DefaultMaxBodyBytes
	}
	slots := cfg.MaxConcurrentEnqueues
	if slots <= 0 {
		slots = DefaultMaxConcurrentEnqueues
	}
	s.enqueueSlots = make(chan struct{}, slots)
	if s.maxPayload == 0 {
		s.maxPayload = persistence.DefaultMaxPayloadBytes
	}
	if s.now == nil {
		s.now = time.Now
	}
	if cfg.Token != "" {
		sum := sha256.Sum256([]byte(cfg.Token))
		s.tokenSum = &sum
	}
	s.handle("GET /api/v1/queues", s.listQueues)
	s.handle("GET /api/v1/queues/{q}", s.getQueue)
	s.handle("GET /api/v1/queues/{q}/jobs", s.listJobs)
	s.handle("POST /api/v1/queues/{q}/jobs", s.enqueue)
	s.handle("GET /api/v1/queues/{q}/jobs/{id...}", s.getJob)
	s.handle("DELETE /api/v1/queues/{q}/jobs/{id...}", s.deleteJob)
	s.handle("GET /api/v1/queues/{q}/processing", s.processing)
	s.handle("POST /api/v1/queues/{q}/actions/{action}", s.queueAction)
	s.handle("GET /api/v1/queues/{q}/morgue", s.listMorgue)
	s.handle("POST /api/v1/queues/{q}/morgue/requeue", s.requeueMorgue)
	s.handle("POST /api/v1/queues/{q}/morgue/delete", s.deleteMorgue)
	s.handle("GET /api/v1/stats", s.stats)
	s.handle("GET /api/v1/cluster", s.cluster)
	s.handle("GET /metrics", s.serveMetrics)
	s.handle("GET /healthz", s.healthz)
	s.handle("GET /readyz", s.readyz)
	return s, nil
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
	s.mux.Handle(pattern, &route{s: s, fn: fn})
}

// ServeHTTP implements http.Handler.
func (s *Server) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	h := w.Header()
	h.Set("X-Content-Type-Options", "nosniff")
	if s.ui != nil && isUIPath(r) {
		s.serveUI(w, r) // caching is the dashboard's to decide
		return
	}
	h.Set("Cache-Control", "no-store")

	if err := s.origin.Check(r); err != nil {
		s.writeError(w, r, &apiError{status: http.StatusForbidden, msg: "cross-origin request rejected"})
		return
	}
	if !s.authorized(r) {
		h.Set("WWW-Authenticate", `Bearer realm="orderly"`)
		s.writeError(w, r, &apiError{status: http.StatusUnauthorized, msg: "missing or invalid bearer token"})
		return
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

// authorized reports whether r may proceed: no token is configured, r is a
// probe or a public read, or r presents the token.
func (s *Server) authorized(r *http.Request) bool {
	if s.tokenSum == nil || r.URL.Path == "/healthz" || r.URL.Path == "/readyz" {
		return true
	}
	if s.publicReads && (r.Method == http.MethodGet || r.Method == http.MethodHead) {
		return true
	}
	scheme, token, ok := strings.Cut(r.Header.Get("Authorization"), " ")
	if !ok || !strings.EqualFold(scheme, "Bearer") {
		return false
	}
	sum := sha256.Sum256([]byte(strings.TrimSpace(token)))
	return subtle.ConstantTimeCompare(sum[:], s.tokenSum[:]) == 1
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
