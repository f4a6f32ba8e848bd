package backoffhttp

import (
	"io"
	"net/http"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

//go:generate go test -run TestWritersGenerated -update .

// ServerConfig configures [Handler]. Its zero value is ready to use.
type ServerConfig struct {
	// Share counts the requests, per route and per caller, retries apart
	// (a request whose AttemptCountHeader is 2 or more), decides which
	// failing answers say not to retry, and which retries are refused as
	// they arrive. Nil means a new Share with retryshare's defaults, made
	// by each Handler; one Share may count the requests of several
	// handlers. A Share whose Threshold is 1 never refuses: it marks no
	// answer and refuses no retry.
	Share *retryshare.Share
	// Route returns a request's route, called when its status is written
	// and, for a retry, when it arrives. Nil means r.Pattern: the pattern
	// of the http.ServeMux that served r ("" if none did; a middleware
	// between Handler and the ServeMux that copies the request, as
	// http.TimeoutHandler does, hides it: then return the pattern of
	// mux.Handler(r)); at a retry's arrival, when h is an *http.ServeMux,
	// the pattern of h.Handler(r).
	Route func(r *http.Request) string
	// Caller returns the key of a request's caller, called when Route is.
	// Nil means r.RemoteAddr: the connection.
	Caller func(r *http.Request) string
}

// Handler wraps h so that a fleet of clients that each retry a little does
// not multiply the load on a failing server. A retry ([Attempt] 2 or
// more) whose caller's retries are over on its route (the Share's Admit
// says false) is refused as it arrives, before h runs: 503 Service
// Unavailable with [DontRetryHeader]: "true" and no Retry-After, counted
// by Admit (a retry of the route, not one of its requests nor a failing
// answer). A
// first try is never refused so. The route of a retry at its arrival is
// Route's, else h's pattern for it when h is an *http.ServeMux, else
// r.Pattern (set by a ServeMux outside Handler); when Handler wraps
// another router, or a middleware in front of a ServeMux, and Route is
// nil, that is "" while h's requests are recorded under their patterns:
// a retry is then refused at arrival only while its caller's retries are
// over on route "", that of the requests no pattern matched. When h's response has its
// final status (written: 200 or more, or 101 Switching Protocols; or the
// end of h), cfg.Share records the request (a retry when [Attempt] says 2
// or more) with its route and caller (route and caller "" when Route or
// Caller panics, before the panic goes on), and a status that
// [RetryableStatus] reports and h did not mark carries [DontRetryHeader]:
// "true" when the Share's Refuse says so. A success (below 400) never
// carries "true", in any letter case: Handler takes it away (a
// [MarkFailure] whose failure h absorbed). A status written after the body
// has begun (a Write or a Flush sends 200) is not marked; a failing one
// that Handler does not mark keeps what h wrote in the header.
//
// Handler must be outside any middleware that answers for h, such as
// http.TimeoutHandler, to mark its answers. The writer h receives offers
// io.ReaderFrom and io.StringWriter, and http.Flusher, http.Hijacker,
// http.CloseNotifier and http.Pusher when the one Handler was given does;
// it unwraps to that one for http.ResponseController, and has FlushError,
// which settles the status before flushing the one below.
func Handler(h http.Handler, cfg ServerConfig) http.Handler {
	share := cfg.Share
	if share == nil {
		share, _ = retryshare.New(retryshare.Config{}) // the defaults are valid
	}
	arrival := cfg.Route
	if mux, ok := h.(*http.ServeMux); ok && arrival == nil {
		arrival = func(r *http.Request) string { _, p := mux.Handler(r); return p }
	}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		sw := &writer{ResponseWriter: w, share: share, cfg: &cfg, req: r, retry: Attempt(r) > 1}
		defer sw.end()
		if sw.retry {
			if route, caller := sw.keys(arrival); !share.Admit(route, caller) {
				sw.final = true // Admit counted it
				w.Header().Set(DontRetryHeader, "true")
				http.Error(w, "retry refused: too many of this route's requests are retries", http.StatusServiceUnavailable)
				return
			}
		}
		h.ServeHTTP(wrap(sw), r)
		sw.decide(http.StatusOK) // h wrote nothing: net/http sends 200
	})
}

// MarkFailure sets [DontRetryHeader]: "true" in w's header when err, the
// error of the failing response h is about to write, is or wraps the
// give-up of a retry loop that retried, or whose budget refused a retry
// ([backoff.Retried]): a Transport's error, or [CheckResponse] of a
// response it gave up on or whose server said not to retry. Any other err
// (nil, a give-up that h absorbed, a loop still retrying, a give-up's text
// alone) leaves w alone. Call it before the status is written: once it is,
// the header is no longer sent. Under [Handler], a status below 400 written
// after it does not carry the header; without Handler, the header stays in
// w's for whatever status follows, so call it only just before a failing
// one.
func MarkFailure(w http.ResponseWriter, err error) {
	if backoff.Retried(err) {
		w.Header().Set(DontRetryHeader, "true")
	}
}

// wrap returns w, which offers io.ReaderFrom and io.StringWriter, with
// exactly those of http.Flusher, http.Hijacker, http.CloseNotifier and
// http.Pusher that the writer it wraps offers.
func wrap(w *writer) http.ResponseWriter {
	return wrappers[interfaces(w.ResponseWriter)](w)
}

// writer records its request in share when the final status is written,
// and adds DontRetryHeader to a failing one that the share refuses.
type writer struct {
	http.ResponseWriter
	share *retryshare.Share
	cfg   *ServerConfig
	req   *http.Request
	retry bool // Attempt(req) > 1
	final bool // a final status has been written, the request recorded
}

func (w *writer) WriteHeader(code int) {
	w.decide(code)
	w.ResponseWriter.WriteHeader(code)
}

func (w *writer) Write(b []byte) (int, error) {
	w.decide(http.StatusOK) // an implicit 200
	return w.ResponseWriter.Write(b)
}

// decide records the request and settles DontRetryHeader for the final
// status code, once: a retryable status that h did not mark gets "true"
// when the share refuses it, and a success never carries "true" (a
// MarkFailure whose failure h then absorbed).
func (w *writer) decide(code int) {
	// 101 Switching Protocols ends the response's headers as a final
	// status does; the other 1xx are informational.
	if w.final || code < 200 && code != http.StatusSwitchingProtocols {
		return
	}
	w.final = true
	route, caller := w.keys(w.cfg.Route)
	w.share.Record(route, caller, w.retry)
	switch {
	case failing(code):
		if RetryableStatus(code) && !saysTrue(w.Header()[DontRetryHeader]) && w.share.Refuse(route, caller) {
			w.Header().Set(DontRetryHeader, "true")
		}
	case saysTrue(w.Header()[DontRetryHeader]):
		w.Header().Del(DontRetryHeader)
	}
}

// end records the request if no status was written: h panicked.
func (w *writer) end() {
	if !w.final {
		w.final = true
		route, caller := w.keys(w.cfg.Route)
		w.share.Record(route, caller, w.retry)
	}
}

// keys returns the request's route (by route, or r.Pattern when route is
// nil) and caller. When route or Caller panics, the request is recorded
// under route "" and caller "", once, before the panic goes on.
func (w *writer) keys(route func(*http.Request) string) (string, string) {
	keyed := false
	defer func() {
		if !keyed {
			w.final = true
			w.share.Record("", "", w.retry)
		}
	}()
	rt, caller := w.req.Pattern, w.req.RemoteAddr
	if route != nil {
		rt = route(w.req)
	}
	if w.cfg.Caller != nil {
		caller = w.cfg.Caller(w.req)
	}
	keyed = true
	return rt, caller
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *writer) Unwrap() http.ResponseWriter { return w.ResponseWriter }

// FlushError flushes the underlying writer through http.ResponseController,
// which reaches it by its FlushError, its Flush or its Unwrap; when it
// can, the status is settled first (an implicit 200). http.ResponseController
// calls it before it would follow Unwrap, so that a flush never sends a
// status Handler has not decided, even when the underlying writer offers
// Flush only through its own Unwrap. It is not http.Flusher: that
// is offered, by flusher, only when the underlying writer offers it.
func (w *writer) FlushError() error {
	if !w.final && flushable(w.ResponseWriter) {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// flushable reports whether http.ResponseController may flush rw: rw, or a
// writer that rw's chain of Unwrap reaches, has FlushError or Flush.
func flushable(rw http.ResponseWriter) bool {
	for {
		switch t := rw.(type) {
		case interface{ FlushError() error }, http.Flusher:
			return true
		case interface{ Unwrap() http.ResponseWriter }:
			rw = t.Unwrap()
		default:
			return false
		}
	}
}

// flusher is http.Flusher for a writer whose underlying writer is one.
type flusher struct{ w *writer }

// Flush sends any buffered data, as FlushError does.
func (f flusher) Flush() { f.w.FlushError() }

// closeNotifier is http.CloseNotifier, by its method: the interface is
// deprecated, yet the writers that offer it must keep offering it.
type closeNotifier interface{ CloseNotify() <-chan bool }

// ReadFrom copies r to the response through the underlying writer's
// ReadFrom (sendfile) when it has one, and its Write otherwise.
func (w *writer) ReadFrom(r io.Reader) (int64, error) {
	w.decide(http.StatusOK) // an implicit 200
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writeOnly{w.ResponseWriter}, r)
}

// writeOnly hides every method of a writer but Write, so that io.Copy
// uses it.
type writeOnly struct{ io.Writer }

// WriteString writes s through the underlying writer's WriteString when it
// has one, and its Write otherwise.
func (w *writer) WriteString(s string) (int, error) {
	w.decide(http.StatusOK) // an implicit 200
	if sw, ok := w.ResponseWriter.(io.StringWriter); ok {
		return sw.WriteString(s)
	}
	return w.ResponseWriter.Write([]byte(s))
}
