package backoff

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"
)

var raNow = time.Date(2026, 11, 30, 12, 0, 0, 0, time.UTC)

func TestParseRetryAfter(t *testing.T) {
	const maxD = time.Duration(math.MaxInt64)
	tests := []struct {
		in     string
		want   time.Duration
		wantOK bool
	}{
		{"120", 120 * time.Second, true},
		{"0", 0, true},
		{"  7\t", 7 * time.Second, true},
		{"000042", 42 * time.Second, true},
		{"9223372036", 9223372036 * time.Second, true},
		{"9223372037", maxD, true},
		{"1000000000000", maxD, true},
		{strings.Repeat("9", 400), maxD, true},
		{"Mon, 30 Nov 2026 12:00:30 GMT", 30 * time.Second, true}, // IMF-fixdate
		{"Monday, 30-Nov-26 12:01:00 GMT", time.Minute, true},     // RFC 850
		{"Mon Nov 30 12:00:05 2026", 5 * time.Second, true},       // asctime
		{"Mon, 30 Nov 2026 11:00:00 GMT", 0, true},                // past
		{"Mon, 30 Nov 2026 12:00:00 GMT", 0, true},                // now
		{"Fri, 31 Dec 9999 23:59:59 GMT", maxD, true},             // far future saturates
		{"", 0, false},
		{"   ", 0, false},
		{"-1", 0, false},
		{"+5", 0, false},
		{"1.5", 0, false},
		{"1e3", 0, false},
		{"5 s", 0, false},
		{"٣", 0, false}, // a non-ASCII digit
		{"garbage", 0, false},
		{"Mon, 30 Nov 2026 12:00:30", 0, false}, // no zone
	}
	for _, tt := range tests {
		got, ok := ParseRetryAfter(tt.in, raNow)
		if got != tt.want || ok != tt.wantOK {
			t.Errorf("ParseRetryAfter(%q) = (%v, %v), want (%v, %v)", tt.in, got, ok, tt.want, tt.wantOK)
		}
	}
}

func FuzzParseRetryAfter(f *testing.F) {
	for _, s := range []string{"0", "120", "1000000000000", "Mon, 30 Nov 2026 12:00:30 GMT", "garbage", " 5 ", "-1"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		d, ok := ParseRetryAfter(s, raNow)
		if d < 0 {
			t.Fatalf("ParseRetryAfter(%q) = %v: negative", s, d)
		}
		if !ok && d != 0 {
			t.Fatalf("ParseRetryAfter(%q) = (%v, false): a refusal must be zero", s, d)
		}
		trimmed := strings.Trim(s, " \t")
		isDigits := trimmed != "" && strings.Trim(trimmed, "0123456789") == ""
		switch {
		case isDigits && !ok:
			t.Fatalf("ParseRetryAfter(%q) refused digits", s)
		case isDigits && len(trimmed) <= 18:
			n, _ := strconv.ParseInt(trimmed, 10, 64)
			want := time.Duration(math.MaxInt64)
			if n <= maxSeconds {
				want = time.Duration(n) * time.Second
			}
			if d != want {
				t.Fatalf("ParseRetryAfter(%q) = %v, want %v", s, d, want)
			}
		case !isDigits && ok:
			if _, err := http.ParseTime(trimmed); err != nil {
				t.Fatalf("ParseRetryAfter(%q) accepted a value that is neither digits nor an HTTP-date", s)
			}
		}
	})
}

func TestRetryAfterPolicy(t *testing.T) {
	backoffPolicy := Must(NewExponential(Config{Base: time.Second, Cap: 8 * time.Second, MaxAttempts: 10}))
	clamp := Must(NewRetryAfter(backoffPolicy, RetryAfterConfig{MaxAttempts: 5, MaxWait: time.Minute}))
	giveUp := Must(NewRetryAfter(backoffPolicy, RetryAfterConfig{MaxAttempts: 5, MaxWait: time.Minute, OverMax: GiveUp}))
	tests := []struct {
		name    string
		p       *RetryAfter
		attempt int
		err     error
		want    time.Duration
		wantOK  bool
	}{
		{"no hint defers", clamp, 3, errTransient, 4 * time.Second, true},
		{"hint used", clamp, 3, WithRetryAfter(errTransient, 30*time.Second), 30 * time.Second, true},
		{"hint through wrapping", clamp, 1, &HTTPError{StatusCode: 429, Delay: 2 * time.Second}, 2 * time.Second, true},
		{"over max clamps", clamp, 1, WithRetryAfter(errTransient, time.Hour), time.Minute, true},
		{"over max gives up", giveUp, 1, WithRetryAfter(errTransient, time.Hour), 0, false},
		{"exactly max", giveUp, 1, WithRetryAfter(errTransient, time.Minute), time.Minute, true},
		{"zero hint defers", clamp, 2, WithRetryAfter(errTransient, 0), 2 * time.Second, true},
		{"negative hint defers", clamp, 2, WithRetryAfter(errTransient, -time.Second), 2 * time.Second, true},
		{"permanent refused", clamp, 1, Permanent(WithRetryAfter(errTransient, time.Second)), 0, false},
		{"non-retryable status refused", clamp, 1, &HTTPError{StatusCode: 404, Delay: time.Second}, 0, false},
		{"attempts exhausted despite hint", clamp, 5, WithRetryAfter(errTransient, time.Second), 0, false},
		{"nil error defers", clamp, 1, nil, time.Second, true},
		{"hint under fmt wrapping", clamp, 1, fmt.Errorf("get: %w", WithRetryAfter(errTransient, 3*time.Second)), 3 * time.Second, true},
		{"hint in a joined error", clamp, 1, errors.Join(errTransient, WithRetryAfter(errTransient, 4*time.Second)), 4 * time.Second, true},
		{"joined error without hint", clamp, 2, errors.Join(errTransient, errTransient), 2 * time.Second, true},
	}
	for _, tt := range tests {
		d, ok := tt.p.NextDelay(tt.attempt, tt.err)
		if d != tt.want || ok != tt.wantOK {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", tt.name, d, ok, tt.want, tt.wantOK)
		}
	}
	if WithRetryAfter(nil, time.Second) != nil {
		t.Error("WithRetryAfter(nil) != nil")
	}
	if e := WithRetryAfter(errTransient, time.Second); !errors.Is(e, errTransient) || !strings.Contains(e.Error(), "1s") {
		t.Errorf("WithRetryAfter: %v", e)
	}
}

func TestRetryAfterHintUsesNoRandomness(t *testing.T) {
	rng := newCountingRng(1)
	inner := Must(NewFullJitter(Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 10}, rng))
	p := Must(NewRetryAfter(inner, RetryAfterConfig{MaxAttempts: 10, MaxWait: time.Minute}))
	p.NextDelay(1, WithRetryAfter(errTransient, time.Second))
	p.NextDelay(1, WithRetryAfter(errTransient, time.Hour))
	if rng.calls != 0 {
		t.Errorf("hinted retries drew %d values", rng.calls)
	}
	p.NextDelay(1, errTransient)
	if rng.calls != 1 {
		t.Errorf("an unhinted retry drew %d values, want 1", rng.calls)
	}
}

func TestRetryAfterSequences(t *testing.T) {
	cfg := Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 10}
	stateless := Must(NewRetryAfter(Must(NewFullJitter(cfg, RuntimeRng{})), RetryAfterConfig{MaxAttempts: 3, MaxWait: time.Second}))
	if stateless.NewSequence() != Policy(stateless) {
		t.Error("RetryAfter over a stateless policy should be its own sequence")
	}
	stateful := Must(NewRetryAfter(Must(NewDecorrelated(cfg, RuntimeRng{})), RetryAfterConfig{MaxAttempts: 3, MaxWait: time.Second}))
	seq := stateful.NewSequence()
	if seq == Policy(stateful) {
		t.Fatal("RetryAfter over a Sequencer must give a fresh sequence")
	}
	if _, ok := seq.(*RetryAfter).next.(*decorrelatedSequence); !ok {
		t.Errorf("sequence wraps %T, want a decorrelated sequence", seq.(*RetryAfter).next)
	}
}

func TestCheckResponse(t *testing.T) {
	serverNow := raNow.Add(-time.Hour) // the local clock is an hour ahead of the server
	tests := []struct {
		name      string
		status    int
		header    http.Header
		wantNil   bool
		wantRetry bool
		wantDelay time.Duration
	}{
		{"ok", 200, nil, true, false, 0},
		{"redirect", 304, nil, true, false, 0},
		{"503 seconds", 503, http.Header{"Retry-After": {"3"}}, false, true, 3 * time.Second},
		{"429 date against server clock", 429, http.Header{
			"Retry-After": {serverNow.Add(20 * time.Second).Format(http.TimeFormat)},
			"Date":        {serverNow.Format(http.TimeFormat)},
		}, false, true, 20 * time.Second},
		{"503 garbage", 503, http.Header{"Retry-After": {"soon"}}, false, true, 0},
		{"404", 404, nil, false, false, 0},
	}
	for _, tt := range tests {
		resp := &http.Response{StatusCode: tt.status, Status: http.StatusText(tt.status), Header: tt.header}
		if resp.Header == nil {
			resp.Header = http.Header{}
		}
		err := CheckResponse(resp)
		if tt.wantNil {
			if err != nil {
				t.Errorf("%s: CheckResponse = %v", tt.name, err)
			}
			continue
		}
		var he *HTTPError
		if !errors.As(err, &he) || Retryable(err) != tt.wantRetry || he.RetryAfter() != tt.wantDelay {
			t.Errorf("%s: CheckResponse = %#v, retryable %v", tt.name, err, Retryable(err))
		}
		if !strings.Contains(err.Error(), http.StatusText(tt.status)) {
			t.Errorf("%s: message %q", tt.name, err)
		}
	}
	var pe *ParamError
	if err := CheckResponse(nil); !errors.As(err, &pe) || pe.Param != "resp" {
		t.Errorf("CheckResponse(nil) = %v", err)
	}
	if got := (&HTTPError{StatusCode: 503}).Error(); got != "backoff: HTTP 503" {
		t.Errorf("message without status line: %q", got)
	}
}

func TestCheckResponseFromServer(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Retry-After", "2")
		w.WriteHeader(http.StatusServiceUnavailable)
	}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	var h Hint
	if err := CheckResponse(resp); !errors.As(err, &h) || h.RetryAfter() != 2*time.Second {
		t.Errorf("CheckResponse = %v", err)
	}
}
