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

// The tests of this file run against real reverse proxies that .ci/proxies
// starts on loopback, and skip when it has not. An environment variable
// for each proxy (BACKOFF_NGINX, BACKOFF_HAPROXY) names its two frontends
// and the two upstream addresses they proxy to, which the tests listen on:
//
//	default=HOST:PORT retry=HOST:PORT upstreams=HOST:PORT,HOST:PORT version=1.22.1
//
// default proxies to the first upstream with the proxy's default
// configuration; retry proxies to both and retries a 503 on the other one.

// A proxyKind is a reverse proxy the tests know how to read the address of
// and describe.
type proxyKind struct {
	name string // as its documentation writes it
	env  string // the environment variable that .ci/proxies sets
	// retrying is the configuration of the retry frontend, as docs/proxies.md and
	// failures quote it.
	retrying string
	// readme renders the docs/proxies.md block fleet-<name in lower case> from
	// the proxy's version and the two figures measured.
	readme func(version string, figures []string) string
}

// nginxProxy: the default frontend has nginx's default proxy
// configuration (proxy_next_upstream error timeout); retry has
// proxy_next_upstream error timeout http_503 over both upstreams (with
// max_fails=0, so that nginx keeps sending to a server that answered 503).
var nginxProxy = proxyKind{
	name:     "nginx",
	env:      "BACKOFF_NGINX",
	retrying: "proxy_next_upstream error timeout http_503",
	readme: func(version string, f []string) string {
		return fmt.Sprintf("With nginx %s between the top two services (`bash .ci/proxies` runs it): **%s** with its default\n"+
			"configuration, which passes both headers unchanged; **%s** with `proxy_next_upstream error timeout\n"+
			"http_503` over two servers, as nginx sends every 503 to its next server whatever the answer says,\n"+
			"and with the caller's attempt count, so its retries are not counted.\n", version, f[0], f[1])
	},
}

// haproxyProxy: the default frontend has HAProxy's defaults (retry-on
// conn-failure, retries 3); retry has retries 1, retry-on 503 and option
// redispatch over both upstreams (no health checks, so that a server that
// answered 503 stays in rotation).
var haproxyProxy = proxyKind{
	name:     "HAProxy",
	env:      "BACKOFF_HAPROXY",
	retrying: "retries 1, retry-on 503, option redispatch",
	readme: func(version string, f []string) string {
		return fmt.Sprintf("With HAProxy %s between them instead: **%s** with its defaults (`retry-on conn-failure` in its 2.6\n"+
			"configuration manual: it resends only a request it could not send), which pass both headers unchanged;\n"+
			"**%s** with `retries 1`, `retry-on 503` and `option redispatch` over two servers, as HAProxy resends every\n"+
			"503 to the other server whatever the answer says, with the caller's attempt count.\n", version, f[0], f[1])
	},
}

// A proxy is a running proxyKind: the URLs of its two frontends, its
// version and its two upstream addresses.
type proxy struct {
	proxyKind
	def, retry, version string
	upstreams           []string
}

// proxyFromEnv returns the proxy of kind that .ci/proxies started, and
// skips the test when it has not.
func proxyFromEnv(t *testing.T, kind proxyKind) proxy {
	t.Helper()
	v := os.Getenv(kind.env)
	if v == "" {
		t.Skipf("%s is not set: run bash .ci/proxies", kind.env)
	}
	p := proxy{proxyKind: kind}
	for _, f := range strings.Fields(v) {
		k, addr, _ := strings.Cut(f, "=")
		switch k {
		case "default":
			p.def = "http://" + addr
		case "retry":
			p.retry = "http://" + addr
		case "version":
			p.version = addr
		case "upstreams":
			p.upstreams = strings.Split(addr, ",")
		}
	}
	if p.def == "" || p.retry == "" || p.version == "" || len(p.upstreams) != 2 {
		t.Fatalf("%s = %q: want default=, retry=, version= and two upstreams=", kind.env, v)
	}
	return p
}

// listen listens on an upstream address of a proxy.
func listen(t *testing.T, addr string) net.Listener {
	t.Helper()
	l, err := net.Listen("tcp", addr)
	if err != nil {
		t.Fatal(err)
	}
	return l
}

// TestNginxPassesTheHeaders: see passesTheHeaders.
func TestNginxPassesTheHeaders(t *testing.T) { passesTheHeaders(t, proxyFromEnv(t, nginxProxy)) }

// TestHAProxyPassesTheHeaders: see passesTheHeaders.
func TestHAProxyPassesTheHeaders(t *testing.T) { passesTheHeaders(t, proxyFromEnv(t, haproxyProxy)) }

// passesTheHeaders: p passes X-Envoy-Attempt-Count up to the server and
// X-Envoy-Ratelimited, "true", "false" or absent, down to the client,
// unchanged. With its default configuration it sends a request once;
// retrying 503s, it sends a 503's request to its other server too, "true"
// or not, with the caller's attempt count.
func passesTheHeaders(t *testing.T, p proxy) {
	var mu sync.Mutex
	var seen [][]string // the attempt counts the servers received
	var servers []int   // and which of them received each
	for i, addr := range p.upstreams {
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			mu.Lock()
			seen = append(seen, r.Header[AttemptCountHeader])
			servers = append(servers, i)
			mu.Unlock()
			if answer := r.URL.Query().Get("answer"); answer != "" {
				w.Header().Set(DontRetryHeader, answer)
			}
			w.WriteHeader(http.StatusServiceUnavailable)
		})}
		go srv.Serve(listen(t, addr))
		defer srv.Close()
	}
	for _, tt := range []struct {
		proxy, answer string // answer "": none
		count         []string
		want          [][]string
	}{
		{p.def, "true", []string{"2"}, [][]string{{"2"}}},
		{p.def, "false", []string{"2"}, [][]string{{"2"}}},
		{p.def, "", nil, [][]string{nil}},
		{p.retry, "true", nil, [][]string{nil, nil}},
		{p.retry, "true", []string{"3"}, [][]string{{"3"}, {"3"}}},
		{p.retry, "false", []string{"2"}, [][]string{{"2"}, {"2"}}},
		{p.retry, "", []string{"2"}, [][]string{{"2"}, {"2"}}},
	} {
		mu.Lock()
		seen, servers = nil, nil
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
		counts, by := seen, servers
		mu.Unlock()
		var answer []string
		if tt.answer != "" {
			answer = []string{tt.answer}
		}
		config := "default"
		if tt.proxy == p.retry {
			config = p.retrying
		}
		if got := resp.Header[DontRetryHeader]; resp.StatusCode != http.StatusServiceUnavailable || !slices.Equal(got, answer) || !slices.EqualFunc(counts, tt.want, slices.Equal) {
			t.Errorf("%s, %s, answer %q, count %q: %s with %s %q, the servers saw counts %q; want 503 with %q, counts %q",
				p.name, config, tt.answer, tt.count, resp.Status, DontRetryHeader, got, counts, answer, tt.want)
		}
		if len(by) == 2 && by[0] == by[1] {
			t.Errorf("%s, %s, answer %q: both attempts went to server %d; want the retry on the other one", p.name, config, tt.answer, by[0])
		}
	}
}

// TestNginxFleet: see proxyFleet.
func TestNginxFleet(t *testing.T) { proxyFleet(t, proxyFromEnv(t, nginxProxy)) }

// TestHAProxyFleet: see proxyFleet.
func TestHAProxyFleet(t *testing.T) { proxyFleet(t, proxyFromEnv(t, haproxyProxy)) }

// proxyFleet: the fleet of TestFleetOverHTTP with p between the top
// service and the middle one: with p's default configuration, as without
// it; retrying 503s over two middle services, p sends each 503 (whatever
// its X-Envoy-Ratelimited) to the other server, with the caller's attempt
// count, so the bottom gets twice the requests. docs/proxies.md quotes the figures
// measured.
func proxyFleet(t *testing.T, p proxy) {
	bottom, hits := failingBottom(t, counted)
	below := service(t, counted, bottom, nil)
	service(t, counted, below, listen(t, p.upstreams[0]))
	service(t, counted, below, listen(t, p.upstreams[1]))
	var ratios []float64
	for _, front := range []string{p.def, p.retry} {
		top := service(t, counted, front, nil)
		before := hits.Load()
		sent := fleet(t, top)
		ratios = append(ratios, float64(hits.Load()-before)/float64(sent))
	}
	t.Logf("%d clients × %d requests through 3 services, %s %s between the top two: %.2f requests at the bottom per request at the top with its defaults, %.2f with %s over two servers",
		fleetClients, fleetPerClient, p.name, p.version, ratios[0], ratios[1], p.retrying)
	if ratios[0] > 1.25 || ratios[1] < 1.8 {
		t.Errorf("%s: %.2f requests at the bottom per request at the top with its defaults, %.2f with %s; want at most 1.25, and about twice that",
			p.name, ratios[0], ratios[1], p.retrying)
	}
	measured(t, "../docs/proxies.md", "fleet-"+strings.ToLower(p.name), ratios, func(f []string) string { return p.readme(p.version, f) })
}
