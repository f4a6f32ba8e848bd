package backoffhttp

import (
	"bufio"
	"io"
	"net"
	"net/http"

	"github.com/backoffgo/backoff/internal/hop"
)

// OverloadedHeader is the response header by which a server says that it
// has retried on its caller's behalf already, so the caller should not
// retry: Envoy's x-envoy-overloaded, which Envoy itself honours the same way
// (its presence stops Envoy's retries; the value is not read).
const OverloadedHeader = "X-Envoy-Overloaded"

// Handler wraps h so that a chain of services retries at one layer only. The
// request's context tells every retry loop that h runs with it ([backoff.Do],
// a [backoff.Retrier], a [Transport]'s RoundTrip); when one of them gives up
// after retrying, stands back from an inner give-up, or is refused by its
// budget, a response of h with a status of 500 or more, or 429, carries
// OverloadedHeader: "true", and a [Transport] that receives it does not
// retry it but returns it at once ([backoff.ErrRetriedBelow] is the reason
// it stopped), nor does a loop around [CheckResponse].
//
// For h's own calls to take part, they must use the request's context (or
// one derived from it), as a handler's outgoing calls should anyway. Without
// Handler, a server's responses never carry the header.
func Handler(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ctx, m := hop.With(r.Context())
		h.ServeHTTP(&overloadWriter{ResponseWriter: w, m: m}, r.WithContext(ctx))
	})
}

// overloadWriter adds OverloadedHeader to a final failing status when its
// request's loops retried.
type overloadWriter struct {
	http.ResponseWriter
	m     *hop.Marker
	final bool // a final status has been written
}

func (w *overloadWriter) WriteHeader(code int) {
	if !w.final && code >= 200 {
		w.final = true
		if w.m.Marked() && (code >= 500 || code == http.StatusTooManyRequests) {
			w.Header().Set(OverloadedHeader, "true")
		}
	}
	w.ResponseWriter.WriteHeader(code)
}

func (w *overloadWriter) Write(b []byte) (int, error) {
	w.final = true // an implicit 200
	return w.ResponseWriter.Write(b)
}

// ReadFrom copies r to the response, through the underlying writer's own
// ReadFrom when it has one (sendfile).
func (w *overloadWriter) ReadFrom(r io.Reader) (int64, error) {
	w.final = true // an implicit 200
	if rf, ok := w.ResponseWriter.(io.ReaderFrom); ok {
		return rf.ReadFrom(r)
	}
	return io.Copy(writerOnly{w.ResponseWriter}, r)
}

// writerOnly hides a writer's ReadFrom from io.Copy.
type writerOnly struct{ io.Writer }

// Flush sends any buffered data, when the underlying writer can.
func (w *overloadWriter) Flush() { w.FlushError() }

// FlushError is Flush, returning the underlying writer's error, for
// http.ResponseController.
func (w *overloadWriter) FlushError() error {
	if !w.final {
		w.WriteHeader(http.StatusOK)
	}
	return http.NewResponseController(w.ResponseWriter).Flush()
}

// Hijack hands over the connection, when the underlying writer can.
func (w *overloadWriter) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	return http.NewResponseController(w.ResponseWriter).Hijack()
}

// Unwrap returns the underlying writer, for http.ResponseController.
func (w *overloadWriter) Unwrap() http.ResponseWriter { return w.ResponseWriter }
