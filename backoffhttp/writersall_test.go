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

	"github.com/backoffgo/backoff/retryshare"
)

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
		middleware := wrappers[set](&writer{ResponseWriter: below, share: share})
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
