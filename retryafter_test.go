package backoff

import (
	"errors"
	"fmt"
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // America/Los_Angeles for TestParseHTTPDateIgnoresHostZone
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
		{"92233720360", maxD, true}, // passes maxSeconds only at its last digit
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
		{"Mon, 30 Nov 2026 12:00:30", 0, false},       // no zone
		{"Mon, 30 Nov 2026 12:00:30 UTC", 0, false},   // HTTP-dates say GMT
		{"Monday, 30-Nov-26 12:01:00 PST", 0, false},  // RFC 850 with another zone
		{"Monday, 30-Nov-26 12:01:00 XYZ", 0, false},  // or none known
		{"Mon, 30 Nov 2026 12:00:30 +0000", 0, false}, // numeric zone
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
		checkAgainstParseTime(t, trimmed)
	})
}

// checkAgainstParseTime compares ParseHTTPDate with net/http's ParseTime: the
// same instant for every date ParseTime reads in GMT or without a zone, and a
// refusal of every other zone, which ParseTime would read by the host's time
// zone database.
func checkAgainstParseTime(t *testing.T, s string) {
	t.Helper()
	got, ok := ParseHTTPDate(s)
	want, err := http.ParseTime(s)
	switch {
	case ok && err != nil:
		t.Fatalf("ParseHTTPDate(%q) = %v; http.ParseTime refuses it: %v", s, got, err)
	case ok && !got.Equal(want):
		t.Fatalf("ParseHTTPDate(%q) = %v; http.ParseTime gives %v", s, got, want)
	case ok && got.Location() != time.UTC:
		t.Fatalf("ParseHTTPDate(%q) is in %v, want UTC", s, got.Location())
	case !ok && err == nil && (strings.HasSuffix(s, " GMT") || !strings.Contains(s, ",")):
		if name, _ := want.Zone(); name == "GMT" || name == "UTC" {
			t.Fatalf("ParseHTTPDate(%q) refused a GMT date that http.ParseTime reads as %v", s, want)
		}
	}
}

func TestParseHTTPDateMatchesParseTime(t *testing.T) {
	base := time.Date(1994, 11, 6, 8, 49, 37, 0, time.UTC)
	for i := range 2000 {
		d := base.Add(time.Duration(i) * 7919 * time.Hour / 3) // dates 1994-2200, varied hours
		for _, layout := range []string{http.TimeFormat, "Monday, 02-Jan-06 15:04:05 GMT", time.ANSIC} {
			s := d.Format(layout)
			checkAgainstParseTime(t, s)
			if _, ok := ParseHTTPDate(s); !ok {
				t.Fatalf("ParseHTTPDate(%q) refused its own form", s)
			}
		}
	}
}

// TestParseHTTPDateIgnoresHostZone runs the zone cases under two local time
// zones: the answer must not change, and zones other than GMT are refused
// (net/http's ParseTime gives 1m under UTC and 8h1m under Los Angeles for
// the PST case).
func TestParseHTTPDateIgnoresHostZone(t *testing.T) {
	la, err := time.LoadLocation("America/Los_Angeles")
	if err != nil {
		t.Fatal(err) // time/tzdata is imported by this test package
	}
	now := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	saved := time.Local
	defer func() { time.Local = saved }()
	for _, loc := range []*time.Location{time.UTC, la} {
		time.Local = loc
		for in, want := range map[string]time.Duration{
			"Thursday, 01-Jan-26 00:01:00 GMT": time.Minute,
			"Thu, 01 Jan 2026 00:01:00 GMT":    time.Minute,
			"Thu Jan  1 00:01:00 2026":         time.Minute,
		} {
			if d, ok := ParseRetryAfter(in, now); !ok || d != want {
				t.Errorf("TZ %v: ParseRetryAfter(%q) = %v, %v; want %v", loc, in, d, ok, want)
			}
		}
		for _, in := range []string{"Thursday, 01-Jan-26 00:01:00 PST", "Thursday, 01-Jan-26 00:01:00 XYZ", "Thu, 01 Jan 2026 00:01:00 PST"} {
			if d, ok := ParseRetryAfter(in, now); ok {
				t.Errorf("TZ %v: ParseRetryAfter(%q) = %v; want a refusal", loc, in, d)
			}
		}
	}
}

func TestRetryAfterPolicy(t *testing.T) {
	backoffPolicy := Must(NewExponential(Config{Base: time.Second, Cap: 8 * time.Second, MaxAttempts: 5}))
	clamp := Must(NewRetryAfter(backoffPolicy, RetryAfterConfig{MaxWait: time.Minute}))
	giveUp := Must(NewRetryAfter(backoffPolicy, RetryAfterConfig{MaxWait: time.Minute, OverMax: GiveUp}))
	errMine := errors.New("mine")
	mine := Must(NewRetryAfter(PolicyFunc(func(int, error) (time.Duration, error) { return 0, errMine }), RetryAfterConfig{MaxWait: time.Minute}))
	tooLong := &HintTooLongError{Hint: time.Hour, MaxWait: time.Minute}
	tests := []struct {
		name    string
		p       *RetryAfter
		attempt int
		err     error
		want    time.Duration
		reason  error
	}{
		{"no hint defers", clamp, 3, errTransient, 4 * time.Second, nil},
		{"hint used", clamp, 3, WithRetryAfter(errTransient, 30*time.Second), 30 * time.Second, nil},
		{"hint under the wrapped delay used", clamp, 4, WithRetryAfter(errTransient, time.Millisecond), time.Millisecond, nil},
		{"over max clamps", clamp, 1, WithRetryAfter(errTransient, time.Hour), time.Minute, nil},
		{"over max gives up", giveUp, 1, WithRetryAfter(errTransient, time.Hour), 0, tooLong},
		{"exactly max", giveUp, 1, WithRetryAfter(errTransient, time.Minute), time.Minute, nil},
		{"zero hint defers", clamp, 2, WithRetryAfter(errTransient, 0), 2 * time.Second, nil},
		{"negative hint defers", clamp, 2, WithRetryAfter(errTransient, -time.Second), 2 * time.Second, nil},
		{"permanent refused", clamp, 1, Permanent(WithRetryAfter(errTransient, time.Second)), 0, ErrPermanent},
		{"declared non-retryable refused", clamp, 1, WithRetryAfter(retryableErr(false), time.Second), 0, ErrPermanent},
		{"attempts exhausted despite hint", clamp, 5, WithRetryAfter(errTransient, time.Second), 0, ErrExhausted},
		{"exhausted before over max", giveUp, 5, WithRetryAfter(errTransient, time.Hour), 0, ErrExhausted},
		{"wrapped policy's own reason", mine, 1, WithRetryAfter(errTransient, time.Second), 0, errMine},
		{"nil error defers", clamp, 1, nil, time.Second, nil},
		{"typed nil hint defers", clamp, 1, (*RetryAfterError)(nil), time.Second, nil},
		{"hint under fmt wrapping", clamp, 1, fmt.Errorf("get: %w", WithRetryAfter(errTransient, 3*time.Second)), 3 * time.Second, nil},
		{"hint in a joined error", clamp, 1, errors.Join(errTransient, WithRetryAfter(errTransient, 4*time.Second)), 4 * time.Second, nil},
		{"joined error without hint", clamp, 2, errors.Join(errTransient, errTransient), 2 * time.Second, nil},
	}
	for _, tt := range tests {
		d, reason := tt.p.NextDelay(tt.attempt, tt.err)
		var hte *HintTooLongError
		sameReason := reason == tt.reason ||
			(errors.As(reason, &hte) && *hte == *tooLong && tt.reason == error(tooLong) && errors.Is(reason, ErrHintTooLong))
		if d != tt.want || !sameReason {
			t.Errorf("%s: got (%v, %v), want (%v, %v)", tt.name, d, reason, tt.want, tt.reason)
		}
	}
	if WithRetryAfter(nil, time.Second) != nil {
		t.Error("WithRetryAfter(nil) != nil")
	}
	if e := WithRetryAfter(errTransient, time.Second); !errors.Is(e, errTransient) || e.Error() != "transient (retry after 1s)" {
		t.Errorf("WithRetryAfter: %v", e)
	}
	for _, e := range []error{(*RetryAfterError)(nil), (*HintTooLongError)(nil), (*permanentError)(nil), (*Error)(nil), (*ParamError)(nil), (*BudgetError)(nil)} {
		if e.Error() == "" {
			t.Errorf("%T(nil).Error() is empty", e)
		}
	}
}

// TestRetryAfterDrawsAsTheWrappedPolicy: the wrapped policy is consulted
// for every failure (it holds the one attempt budget), so a hinted retry
// spends its draw; giving up, hinted or not, still draws nothing.
func TestRetryAfterDrawsAsTheWrappedPolicy(t *testing.T) {
	rng := newCountingRng(1)
	inner := Must(NewFullJitter(Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 3}, rng))
	p := Must(NewRetryAfter(inner, RetryAfterConfig{MaxWait: time.Minute, OverMax: GiveUp}))
	for _, step := range []struct {
		attempt int
		err     error
		draws   int
	}{
		{1, WithRetryAfter(errTransient, time.Second), 1},
		{1, WithRetryAfter(errTransient, time.Hour), 1},
		{1, errTransient, 1},
		{3, WithRetryAfter(errTransient, time.Second), 0},
		{1, Permanent(WithRetryAfter(errTransient, time.Second)), 0},
	} {
		before := rng.calls
		p.NextDelay(step.attempt, step.err)
		if got := rng.calls - before; got != step.draws {
			t.Errorf("NextDelay(%d, %v) drew %d values, want %d", step.attempt, step.err, got, step.draws)
		}
	}
}

func TestRetryAfterSequences(t *testing.T) {
	cfg := Config{Base: time.Second, Cap: time.Minute, MaxAttempts: 10}
	stateless := Must(NewRetryAfter(Must(NewFullJitter(cfg, RuntimeRng{})), RetryAfterConfig{MaxWait: time.Second}))
	if stateless.NewSequence() != Policy(stateless) {
		t.Error("RetryAfter over a stateless policy should be its own sequence")
	}
	stateful := Must(NewRetryAfter(Must(NewDecorrelated(cfg, RuntimeRng{})), RetryAfterConfig{MaxWait: time.Second}))
	seq := stateful.NewSequence()
	if seq == Policy(stateful) {
		t.Fatal("RetryAfter over a Sequencer must give a fresh sequence")
	}
	if _, ok := seq.(*RetryAfter).next.(*decorrelatedSequence); !ok {
		t.Errorf("sequence wraps %T, want a decorrelated sequence", seq.(*RetryAfter).next)
	}
}
