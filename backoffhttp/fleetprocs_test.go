package backoffhttp

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/http"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/retryshare"
)

// A herd on real processes (issue 33): 4 server processes on loopback, each
// a Handler (its default ServerConfig, but a Share with a short window)
// around a dependency that always answers 503, behind a random balancer
// (every attempt goes to one of the 4 at random), and a herd of 1,000
// goroutines sending one GET each at once through one Transport (3
// attempts, full jitter with a 100 ms base), in bursts each after the
// servers' window has passed. The load at the bottom is the requests the
// servers received per request the herd sent.

const (
	fleetProcsEnv       = "BACKOFFHTTP_FLEET_SERVE"     // set: this process serves
	fleetProcsWindowEnv = "BACKOFFHTTP_FLEET_WINDOW"    // the Share's Window
	fleetProcsThreshEnv = "BACKOFFHTTP_FLEET_THRESHOLD" // the Share's Threshold
	fleetProcsAddr      = "fleet-addr "                 // the line that passes a server's address back

	fleetProcs     = 4
	fleetHerd      = 1000
	fleetBursts    = 3
	fleetWindow    = time.Second
	fleetCountPath = "/fleet-count" // the admin endpoint: requests received so far
)

// TestFleetProcesses: with the share, the herd costs less than 1.5
// requests at the bottom per request (the goal is 1.25; the
// figures are logged); without it (a Share whose Threshold is 1), more
// than 2.5 (3: every request makes its 3 attempts).
func TestFleetProcesses(t *testing.T) {
	if os.Getenv(fleetProcsEnv) != "" {
		serveFleetProcess(t)
		return
	}
	if testing.Short() {
		t.Skip("4 server processes and a herd of 1,000 goroutines")
	}
	for _, c := range []struct {
		name      string
		threshold float64 // 0: the default
		ok        func(load float64) bool
		want      string
	}{
		{"with the share", 0, func(l float64) bool { return l < 1.5 }, "less than 1.5 (the goal: at most 1.25)"},
		{"without the share (Threshold 1)", 1, func(l float64) bool { return l > 2.5 }, "more than 2.5"},
	} {
		bursts := herdLoad(t, c.threshold)
		var all byAttempt
		for i, b := range bursts {
			t.Logf("%s, burst %d: %.3f requests at the bottom per request (%d first attempts, %d second, %d third)",
				c.name, i+1, float64(b.total())/fleetHerd, b[0], b[1], b[2])
			all = all.plus(b)
		}
		load := float64(all.total()) / float64(fleetHerd*len(bursts))
		t.Logf("%s: %.3f requests at the bottom per request (%d processes behind a random balancer, %d bursts of %d goroutines, window %v)",
			c.name, load, fleetProcs, len(bursts), fleetHerd, fleetWindow)
		if !c.ok(load) {
			t.Errorf("%s: %.3f requests at the bottom per request; want %s", c.name, load, c.want)
		}
	}
}

// herdLoad starts fleetProcs servers whose Share has threshold (0: the
// default), sends the herd fleetBursts times, and returns the requests the
// servers received in each burst.
func herdLoad(t *testing.T, threshold float64) []byAttempt {
	addrs := startFleetProcesses(t, threshold)
	base := &http.Transport{MaxIdleConns: 2 * fleetHerd, MaxIdleConnsPerHost: fleetHerd}
	t.Cleanup(base.CloseIdleConnections)
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{
		Base: 100 * time.Millisecond, Cap: 10 * time.Second, MaxAttempts: 3,
	}, backoff.RuntimeRng{}))
	client := NewClient(&Transport{Base: &balancer{base: base, addrs: addrs}, Retrier: &backoff.Retrier{Policy: policy}})

	bursts := make([]byAttempt, fleetBursts)
	before := fleetCount(t, addrs)
	for i := range bursts {
		if i > 0 {
			time.Sleep(fleetWindow + fleetWindow/10) // the servers' windows are empty again
		}
		herd(t, client)
		after := fleetCount(t, addrs)
		bursts[i] = after.minus(before)
		before = after
	}
	return bursts
}

// herd sends one GET from each of fleetHerd goroutines, released at once,
// and waits for their answers: 503s, given up on.
func herd(t *testing.T, client *http.Client) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for range fleetHerd {
		wg.Go(func() {
			<-start
			resp, err := client.Get("http://fleet/")
			if err != nil {
				t.Error(err)
				return
			}
			io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			if resp.StatusCode != http.StatusServiceUnavailable {
				t.Errorf("status %d, want 503", resp.StatusCode)
			}
		})
	}
	close(start)
	wg.Wait()
}

// balancer sends each attempt to one of addrs at random.
type balancer struct {
	base  http.RoundTripper
	addrs []string
}

func (b *balancer) RoundTrip(req *http.Request) (*http.Response, error) {
	r := req.Clone(req.Context())
	r.URL.Host = b.addrs[rand.IntN(len(b.addrs))]
	r.Host = ""
	return b.base.RoundTrip(r)
}

// byAttempt counts requests received: first attempts, second, and later
// ones.
type byAttempt [3]int64

func (a byAttempt) total() int64 { return a[0] + a[1] + a[2] }

func (a byAttempt) plus(b byAttempt) byAttempt {
	return byAttempt{a[0] + b[0], a[1] + b[1], a[2] + b[2]}
}

func (a byAttempt) minus(b byAttempt) byAttempt {
	return byAttempt{a[0] - b[0], a[1] - b[1], a[2] - b[2]}
}

// fleetCount returns the requests the servers at addrs have received, in
// all.
func fleetCount(t *testing.T, addrs []string) byAttempt {
	var total byAttempt
	for _, a := range addrs {
		resp, err := http.Get("http://" + a + fleetCountPath)
		if err != nil {
			t.Fatal(err)
		}
		b, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		var n byAttempt
		if _, err := fmt.Sscan(string(b), &n[0], &n[1], &n[2]); err != nil {
			t.Fatalf("%s%s: %q: %v", a, fleetCountPath, b, err)
		}
		total = total.plus(n)
	}
	return total
}

// startFleetProcesses starts fleetProcs copies of the test binary that
// serve (serveFleetProcess) with a Share of threshold, and returns their
// addresses. Each exits when its standard input closes: at the end of t,
// or when this process dies.
func startFleetProcesses(t *testing.T, threshold float64) []string {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	addrs := make([]string, fleetProcs)
	for i := range addrs {
		cmd := exec.Command(exe, "-test.run=^TestFleetProcesses$", "-test.count=1")
		cmd.Env = append(os.Environ(),
			fleetProcsEnv+"=1",
			fleetProcsWindowEnv+"="+fleetWindow.String(),
			fleetProcsThreshEnv+"="+strconv.FormatFloat(threshold, 'g', -1, 64))
		stdin, err := cmd.StdinPipe()
		if err != nil {
			t.Fatal(err)
		}
		pr, pw := io.Pipe()
		cmd.Stdout = pw
		cmd.Stderr = os.Stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		addr := make(chan string, 1)
		go func() {
			s := bufio.NewScanner(pr)
			for s.Scan() {
				if a, ok := strings.CutPrefix(s.Text(), fleetProcsAddr); ok {
					addr <- a
				}
			}
			close(addr)
			io.Copy(io.Discard, pr)
		}()
		exited := make(chan error, 1)
		go func() { exited <- cmd.Wait(); pw.Close() }()
		t.Cleanup(func() {
			stdin.Close() // the server returns
			select {
			case err := <-exited:
				if err != nil {
					t.Errorf("server process %d: %v", i, err)
				}
			case <-time.After(10 * time.Second):
				cmd.Process.Kill()
				t.Errorf("server process %d did not exit within 10 s of its input's end: killed", i)
				<-exited
			}
		})
		select {
		case a, ok := <-addr:
			if !ok {
				t.Fatalf("server process %d ended without an address", i)
			}
			addrs[i] = a
		case <-time.After(30 * time.Second):
			t.Fatalf("server process %d gave no address within 30 s", i)
		}
	}
	return addrs
}

// serveFleetProcess is a server process: on 127.0.0.1:0, a Handler with a
// Share of the window and threshold its environment gives, around a
// handler that always answers 503, and fleetCountPath, which answers the
// number of requests that handler received: first attempts, second, and
// later ones. It writes its address on
// standard output and serves until standard input ends.
func serveFleetProcess(t *testing.T) {
	window, err := time.ParseDuration(os.Getenv(fleetProcsWindowEnv))
	if err != nil {
		t.Fatal(err)
	}
	threshold, err := strconv.ParseFloat(os.Getenv(fleetProcsThreshEnv), 64)
	if err != nil {
		t.Fatal(err)
	}
	share, err := retryshare.New(retryshare.Config{Window: window, Threshold: threshold})
	if err != nil {
		t.Fatal(err)
	}
	var received [3]atomic.Int64 // by attempt: 1, 2, 3 and more
	failing := http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		received[min(Attempt(r), 3)-1].Add(1)
		w.WriteHeader(http.StatusServiceUnavailable) // the dependency failing
	})
	mux := http.NewServeMux()
	mux.Handle("/", Handler(failing, ServerConfig{Share: share}))
	mux.HandleFunc(fleetCountPath, func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintln(w, received[0].Load(), received[1].Load(), received[2].Load())
	})
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: mux}
	go srv.Serve(l)
	fmt.Printf("%s%s\n", fleetProcsAddr, l.Addr())
	io.Copy(io.Discard, os.Stdin) // until the test's end closes it
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	srv.Shutdown(ctx)
}
