package backoffhttp

import (
	"fmt"
	"net"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
)

// The tests of this file run against a real nginx that .ci/proxies starts
// on loopback, and skip when it has not: BACKOFF_NGINX names its two
// servers and the two upstream addresses they proxy to, which the tests
// listen on:
//
//	default=HOST:PORT retry=HOST:PORT upstreams=HOST:PORT,HOST:PORT version=1.22.1
//
// default proxies to the first upstream with nginx's default proxy
// configuration (proxy_next_upstream error timeout); retry proxies to both
// with proxy_next_upstream error timeout http_503 (and max_fails=0, so that
// nginx keeps sending to a server that answered 503).

type nginx struct {
	def, retry, version string
	upstreams           []string
}

func nginxFromEnv(t *testing.T) nginx {
	t.Helper()
	v := os.Getenv("BACKOFF_NGINX")
	if v == "" {
		t.Skip("BACKOFF_NGINX is not set: run bash .ci/proxies")
	}
	var n nginx
	for _, f := range strings.Fields(v) {
		k, addr, _ := strings.Cut(f, "=")
		switch k {
		case "default":
			n.def = "http://" + addr
		case "retry":
			n.retry = "http://" + addr
		case "version":
			n.version = addr
		case "upstreams":
			n.upstreams = strings.Split(addr, ",")
		}
	}
	if n.def == "" || n.retry == "" || n.version == "" || len(n.upstreams) != 2 {
		t.Fatalf("BACKOFF_NGINX = %q: want default=, retry=, version= and two upstreams=", v)
	}
	return n
}

// listen listens on an upstream address of nginx.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestNginxPassesTheHeaders: nginx passes X-Envoy-Attempt-Count up to the
// server and X-Envoy-Ratelimited, "true" or "false", down to the client,
// unchanged. With its default configuration it sends a request once; with
// proxy_next_upstream http_503 it sends a 503's request to its other server
// too, "true" or not, with the caller's attempt count.
func TestNginxPassesTheHeaders(t *testing.T) {
	n := nginxFromEnv(t)
	var mu sync.Mutex
	var seen [][]string // the attempt counts the servers received
	for _, addr := range n.upstreams {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header[AttemptCountHeader])
			mu.Unlock()
			w.Header().Set(DontRetryHeader, r.URL.Query().Get("answer"))
			w.WriteHeader(http.StatusServiceUnavailable)
		})}
		go srv.Serve(listen(t, addr))
		defer srv.Close()
	}
	for _, tt := range []struct {
		proxy, answer string
		count         []string
		want          [][]string
	}{
		{n.def, "true", []string{"2"}, [][]string{{"2"}}},
		{n.def, "false", []string{"2"}, [][]string{{"2"}}},
		{n.retry, "true", nil, [][]string{nil, nil}},
		{n.retry, "true", []string{"3"}, [][]string{{"3"}, {"3"}}},
		{n.retry, "false", []string{"2"}, [][]string{{"2"}, {"2"}}},
	} {
		mu.Lock()
		seen = nil
		mu.Unlock()
		req, _ := http.NewRequest(http.MethodGet, tt.proxy+"/?answer="+tt.answer, nil)
		if tt.count != nil {
			req.Header[AttemptCountHeader] = tt.count
		}
		resp, err := pool.RoundTrip(req)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		mu.Lock()
		counts := seen
		mu.Unlock()
		name := "default"
		if tt.proxy == n.retry {
			name = "proxy_next_upstream http_503"
		}
		if got := resp.Header[DontRetryHeader]; resp.StatusCode != http.StatusServiceUnavailable || !slices.Equal(got, []string{tt.answer}) || !slices.EqualFunc(counts, tt.want, slices.Equal) {
			t.Errorf("nginx, %s, answer %s, count %q: %s with %s %q, the servers saw counts %q; want 503 with [%s], counts %q",
				name, tt.answer, tt.count, resp.Status, DontRetryHeader, got, counts, tt.answer, tt.want)
		}
	}
}

// TestNginxFleet: the fleet of TestFleetOverHTTP with nginx between the
// top service and the middle one: with nginx's default configuration, as
// without it; with proxy_next_upstream http_503 over two middle services,
// nginx sends each 503 (whatever its X-Envoy-Ratelimited) to the other
// server, with the caller's attempt count, so the bottom gets twice the
// requests. README quotes the figures measured.
func TestNginxFleet(t *testing.T) {
	n := nginxFromEnv(t)
	bottom, hits := failingBottom(t, Handler)
	below := service(t, Handler, bottom, nil)
	service(t, Handler, below, listen(t, n.upstreams[0]))
	service(t, Handler, below, listen(t, n.upstreams[1]))
	var ratios []float64
	for _, proxy := range []string{n.def, n.retry} {
		top := service(t, Handler, proxy, nil)
		before := hits.Load()
		sent := fleet(t, top)
		ratios = append(ratios, float64(hits.Load()-before)/float64(sent))
	}
	t.Logf("%d clients × %d requests through 3 services, nginx between the top two: %.2f requests at the bottom per request at the top with its defaults, %.2f with proxy_next_upstream http_503 over two servers",
		fleetClients, fleetPerClient, ratios[0], ratios[1])
	if ratios[0] > 1.25 || ratios[1] < 1.8 {
		t.Errorf("nginx: %.2f requests at the bottom per request at the top with its defaults, %.2f retrying 503; want at most 1.25, and about twice that", ratios[0], ratios[1])
	}
	measured(t, "fleet-nginx", ratios, func(f []string) string {
		return fmt.Sprintf("With nginx %s between the top two services (`bash .ci/proxies` runs it): **%s** with its default\n"+
			"configuration, which passes both headers unchanged; **%s** with `proxy_next_upstream error timeout\n"+
			"http_503` over two servers, as nginx sends every 503 to its next server whatever the answer says,\n"+
			"and with the caller's attempt count, so its retries are not counted.\n", n.version, f[0], f[1])
	})
}
