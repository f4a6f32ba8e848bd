package backoffhttp

import (
	"bufio"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/backoffgo/backoff/retryshare"
)

// TestHandlerKeepsTheWriter: a handler behind Handler still reaches the
// underlying writer's features through http.ResponseController.
func TestHandlerKeepsTheWriter(t *testing.T) {
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		rc := http.NewResponseController(w)
		if err := rc.SetWriteDeadline(time.Now().Add(time.Minute)); err != nil {
			t.Errorf("SetWriteDeadline through Handler: %v", err)
		}
		w.Write([]byte("ok"))
	}), ServerConfig{}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
}

// offered lists the optional interfaces that w offers, by type assertion.
func offered(w http.ResponseWriter) []string {
	var names []string
	for name, ok := range map[string]bool{
		"Flusher":       is[http.Flusher](w),
		"Hijacker":      is[http.Hijacker](w),
		"CloseNotifier": is[closeNotifier](w), // http.CloseNotifier's method set, without its deprecation
		"Pusher":        is[http.Pusher](w),
		"ReaderFrom":    is[io.ReaderFrom](w),
		"StringWriter":  is[io.StringWriter](w),
	} {
		if ok {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// withFallbacks returns names, sorted, with ReaderFrom and StringWriter,
// which Handler's writer always offers.
func withFallbacks(names []string) []string {
	all := slices.Concat(names, []string{"ReaderFrom", "StringWriter"})
	slices.Sort(all)
	return slices.Compact(all)
}

func is[T any](w http.ResponseWriter) bool {
	_, ok := w.(T)
	return ok
}

// TestHandlerWriterInterfaces: the writer that h receives through Handler
// offers exactly the optional interfaces of the one Handler was given, and
// io.ReaderFrom and io.StringWriter in any case, over real HTTP/1 and
// HTTP/2 servers and through middleware writers.
func TestHandlerWriterInterfaces(t *testing.T) {
	var raw, wrapped []string
	record := func(w http.ResponseWriter, r *http.Request) {
		raw = offered(w)
		Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { wrapped = offered(w) }), ServerConfig{}).ServeHTTP(w, r)
	}
	for _, tt := range []struct {
		name  string
		start func(*httptest.Server)
		want  []string
	}{
		{"HTTP/1", (*httptest.Server).Start, []string{"CloseNotifier", "Flusher", "Hijacker", "ReaderFrom", "StringWriter"}},
		{"HTTP/2", func(s *httptest.Server) { s.EnableHTTP2 = true; s.StartTLS() }, []string{"CloseNotifier", "Flusher", "Pusher", "StringWriter"}},
		{"HTTP/1 inside http.TimeoutHandler", func(s *httptest.Server) {
			s.Config.Handler = http.TimeoutHandler(s.Config.Handler, time.Minute, "")
			s.Start()
		}, []string{"Pusher"}},
	} {
		raw, wrapped = nil, nil
		srv := httptest.NewUnstartedServer(http.HandlerFunc(record))
		tt.start(srv)
		resp, err := srv.Client().Get(srv.URL)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		srv.Close()
		if !slices.Equal(raw, tt.want) || !slices.Equal(wrapped, withFallbacks(raw)) {
			t.Errorf("%s: the server's writer offers %v (want %v), Handler's %v", tt.name, raw, tt.want, wrapped)
		}
	}
	rec := httptest.NewRecorder()
	record(rec, httptest.NewRequest("GET", "/", nil))
	if want := []string{"Flusher", "StringWriter"}; !slices.Equal(raw, want) || !slices.Equal(wrapped, withFallbacks(raw)) {
		t.Errorf("over an httptest.ResponseRecorder, which offers %v (want %v), Handler's writer offers %v", raw, want, wrapped)
	}
}

// TestHandlerWriterWorks: what the writer offers works through Handler:
// Hijack, ReadFrom and WriteString over HTTP/1 and over a writer that has
// only Write, and a flush error reaches http.ResponseController.
func TestHandlerWriterWorks(t *testing.T) {
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		switch r.URL.Path {
		case "/hijack":
			conn, buf, err := w.(http.Hijacker).Hijack()
			if err != nil {
				t.Error(err)
				return
			}
			defer conn.Close()
			buf.WriteString("HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\nhijacked")
			buf.Flush()
		case "/copy":
			w.(io.ReaderFrom).ReadFrom(strings.NewReader("copied"))
			w.WriteHeader(http.StatusServiceUnavailable)
		case "/string":
			w.(io.StringWriter).WriteString("string")
			w.WriteHeader(http.StatusServiceUnavailable)
		}
	}), ServerConfig{}))
	defer srv.Close()
	for path, want := range map[string]string{"/hijack": "hijacked", "/copy": "copied", "/string": "string"} {
		resp, err := http.Get(srv.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if string(body) != want || resp.StatusCode != http.StatusOK {
			t.Errorf("%s: %s %q, want 200 %q", path, resp.Status, body, want)
		}
	}
	// A writer with neither ReadFrom nor WriteString: both write through
	// its Write, and send 200 as Write does.
	plain := httptest.NewRecorder()
	Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.(io.ReaderFrom).ReadFrom(strings.NewReader("copied "))
		w.(io.StringWriter).WriteString("string")
		w.WriteHeader(http.StatusServiceUnavailable) // too late
	}), ServerConfig{Share: overShare(t)}).ServeHTTP(struct{ http.ResponseWriter }{plain}, httptest.NewRequest("GET", "/", nil))
	if plain.Code != http.StatusOK || plain.Body.String() != "copied string" || plain.Header()[DontRetryHeader] != nil {
		t.Errorf("over a plain writer: %d %q, header %q; want 200 \"copied string\" unmarked", plain.Code, plain.Body, plain.Header()[DontRetryHeader])
	}
	// A writer that cannot flush: the error reaches ResponseController.
	rec := struct{ http.ResponseWriter }{httptest.NewRecorder()}
	Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if err := http.NewResponseController(w).Flush(); err == nil {
			t.Error("Flush through Handler over a writer that cannot flush: nil error")
		}
	}), ServerConfig{}).
		ServeHTTP(rec, httptest.NewRequest("GET", "/", nil))
}

// bitNames are the names offered reports of the interfaces of optional,
// in the order of the bits of interfaces and wrappers.
var bitNames = []string{"Flusher", "Hijacker", "CloseNotifier", "Pusher"}

// namesOf lists the interfaces of a set of bits, as offered sorts them,
// with ReaderFrom and StringWriter, which Handler's writer always offers.
func namesOf(set int) []string {
	names := []string{"ReaderFrom", "StringWriter"}
	for i, name := range bitNames {
		if set&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// allFour is a middleware's writer over an HTTP/1 server's, which offers
// every optional interface of bitNames and no other: Flush and CloseNotify
// reach the server's writer, Hijack and Push (which HTTP/1 has not) only
// say that they were called. Every call is recorded.
type allFour struct {
	http.ResponseWriter
	mu    sync.Mutex
	calls []string
}

func (w *allFour) called(name string) {
	w.mu.Lock()
	w.calls = append(w.calls, name)
	w.mu.Unlock()
}

var errNotHere = errors.New("not here")

func (w *allFour) Flush() { w.called("Flusher"); w.ResponseWriter.(http.Flusher).Flush() }

func (w *allFour) CloseNotify() <-chan bool {
	w.called("CloseNotifier")
	return w.ResponseWriter.(closeNotifier).CloseNotify()
}

func (w *allFour) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.called("Hijacker")
	return nil, nil, errNotHere
}

func (w *allFour) Push(string, *http.PushOptions) error { w.called("Pusher"); return errNotHere }

// allSix is allFour with ReadFrom and WriteString, which reach the
// server's writer.
type allSix struct{ *allFour }

func (w allSix) ReadFrom(r io.Reader) (int64, error) {
	w.called("ReaderFrom")
	return w.ResponseWriter.(io.ReaderFrom).ReadFrom(r)
}

func (w allSix) WriteString(s string) (int, error) {
	w.called("StringWriter")
	return w.ResponseWriter.(io.StringWriter).WriteString(s)
}

// use calls every optional method that w offers, each once, in bitNames'
// order, then ReadFrom and WriteString, which write the body "ok".
func use(t *testing.T, w http.ResponseWriter) {
	if f, ok := w.(http.Flusher); ok {
		f.Flush()
	}
	if h, ok := w.(http.Hijacker); ok {
		if _, _, err := h.Hijack(); err != errNotHere {
			t.Errorf("Hijack: %v; want the middleware's error", err)
		}
	}
	if c, ok := w.(closeNotifier); ok {
		c.CloseNotify()
	}
	if p, ok := w.(http.Pusher); ok {
		if err := p.Push("/x", nil); err != errNotHere {
			t.Errorf("Push: %v; want the middleware's error", err)
		}
	}
	w.(io.ReaderFrom).ReadFrom(strings.NewReader("o"))
	w.(io.StringWriter).WriteString("k")
}

// TestHandlerWriterEverySet: for each of the 16 sets of optional
// interfaces that Handler's writer offers only when the writer it wraps
// does, over a real HTTP/1 server, the writer that h receives through
// Handler offers exactly that set, with ReaderFrom and StringWriter; each
// of its methods reaches the middleware's writer once, and so do ReadFrom
// and WriteString when the writer below the middleware has them (else they
// fall back to Write). (The middleware's writers are the wrappers Handler
// itself uses, over allFour or allSix; each is checked to offer its set
// first.)
func TestHandlerWriterEverySet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set, _ := strconv.Atoi(r.URL.Query().Get("set"))
		six := r.URL.Query().Get("six") == "true"
		four := &allFour{ResponseWriter: w}
		var below http.ResponseWriter = four
		if six {
			below = allSix{four}
		}
		share, err := retryshare.New(retryshare.Config{})
		if err != nil {
			t.Error(err)
			return
		}
		middleware := wrappers[set](&writer{ResponseWriter: below, share: share, cfg: &ServerConfig{}, req: r})
		if got := offered(middleware); !slices.Equal(got, namesOf(set)) {
			t.Errorf("set %d: the middleware's writer offers %v; want %v", set, got, namesOf(set))
		}
		Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if got := offered(w); !slices.Equal(got, namesOf(set)) {
				t.Errorf("set %d: Handler's writer offers %v; want %v", set, got, namesOf(set))
			}
			use(t, w)
		}), ServerConfig{}).ServeHTTP(middleware, r)
		var want []string
		for i, name := range bitNames {
			if set&(1<<i) != 0 {
				want = append(want, name)
			}
		}
		if six {
			want = append(want, "ReaderFrom", "StringWriter")
		}
		if !slices.Equal(four.calls, want) {
			t.Errorf("set %d, six %v: calls %v reached the middleware's writer; want %v", set, six, four.calls, want)
		}
	}))
	defer srv.Close()
	for set := range len(wrappers) {
		for _, six := range []bool{false, true} {
			resp, err := srv.Client().Get(srv.URL + "/?set=" + strconv.Itoa(set) + "&six=" + strconv.FormatBool(six))
			if err != nil {
				t.Fatal(err)
			}
			body, _ := io.ReadAll(resp.Body)
			resp.Body.Close()
			if resp.StatusCode != 200 || string(body) != "ok" {
				t.Errorf("set %d, six %v: %s %q; want 200 ok", set, six, resp.Status, body)
			}
		}
	}
}
