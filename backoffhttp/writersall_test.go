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

// bitNames are the names offered reports, in the order of the bits of
// interfaces and wrappers.
var bitNames = []string{"Flusher", "Hijacker", "CloseNotifier", "Pusher", "ReaderFrom", "StringWriter"}

// namesOf lists the interfaces of a set of bits, as offered sorts them.
func namesOf(set int) []string {
	var names []string
	for i, name := range bitNames {
		if set&(1<<i) != 0 {
			names = append(names, name)
		}
	}
	slices.Sort(names)
	return names
}

// allSix is a middleware's writer over an HTTP/1 server's, which offers
// every optional interface: Flush, CloseNotify, ReadFrom and WriteString
// reach the server's writer, Hijack and Push (which HTTP/1 has not) only
// say that they were called. Every call is recorded.
type allSix struct {
	http.ResponseWriter
	mu    sync.Mutex
	calls []string
}

func (w *allSix) called(name string) {
	w.mu.Lock()
	w.calls = append(w.calls, name)
	w.mu.Unlock()
}

var errNotHere = errors.New("not here")

func (w *allSix) Flush() { w.called("Flusher"); w.ResponseWriter.(http.Flusher).Flush() }
func (w *allSix) CloseNotify() <-chan bool {
	w.called("CloseNotifier")
	return w.ResponseWriter.(closeNotifier).CloseNotify()
}
func (w *allSix) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	w.called("Hijacker")
	return nil, nil, errNotHere
}
func (w *allSix) Push(string, *http.PushOptions) error { w.called("Pusher"); return errNotHere }
func (w *allSix) ReadFrom(r io.Reader) (int64, error) {
	w.called("ReaderFrom")
	return w.ResponseWriter.(io.ReaderFrom).ReadFrom(r)
}
func (w *allSix) WriteString(s string) (int, error) {
	w.called("StringWriter")
	return w.ResponseWriter.(io.StringWriter).WriteString(s)
}

// use calls every optional method that w offers, each once, in bitNames'
// order, and writes the body "ok".
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
	if r, ok := w.(io.ReaderFrom); ok {
		r.ReadFrom(strings.NewReader("o"))
	} else {
		io.WriteString(struct{ io.Writer }{w}, "o")
	}
	if s, ok := w.(io.StringWriter); ok {
		s.WriteString("k")
	} else {
		w.Write([]byte("k"))
	}
}

// TestHandlerWriterEverySet: for each of the 64 sets of optional interfaces
// that a middleware's writer may offer, over a real HTTP/1 server, the
// writer that h receives through Handler offers exactly that set, and each
// of its methods reaches the middleware's writer, once. (The middleware's
// writers are the wrappers Handler itself uses, over one that offers all
// six; each is checked to offer its set first.)
func TestHandlerWriterEverySet(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		set, _ := strconv.Atoi(r.URL.Query().Get("set"))
		six := &allSix{ResponseWriter: w}
		share, err := retryshare.New(retryshare.Config{})
		if err != nil {
			t.Error(err)
			return
		}
		middleware := wrappers[set](&writer{ResponseWriter: six, share: share})
		if got := offered(middleware); !slices.Equal(got, namesOf(set)) {
			t.Errorf("set %d: the middleware's writer offers %v; want %v", set, got, namesOf(set))
		}
		Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			if got := offered(w); !slices.Equal(got, namesOf(set)) {
				t.Errorf("set %d: Handler's writer offers %v; want %v", set, got, namesOf(set))
			}
			use(t, w)
		}), ServerConfig{}).
			ServeHTTP(middleware, r)
		want := namesOf(set)
		slices.SortFunc(want, func(a, b string) int { return slices.Index(bitNames, a) - slices.Index(bitNames, b) })
		if !slices.Equal(six.calls, want) {
			t.Errorf("set %d: calls %v reached the middleware's writer; want %v", set, six.calls, want)
		}
	}))
	defer srv.Close()
	for set := range len(wrappers) {
		resp, err := srv.Client().Get(srv.URL + "/?set=" + strconv.Itoa(set))
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		if resp.StatusCode != 200 || string(body) != "ok" {
			t.Errorf("set %d: %s %q; want 200 ok", set, resp.Status, body)
		}
	}
}
