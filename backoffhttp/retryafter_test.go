package backoffhttp

import (
	"math"
	"net/http"
	"strconv"
	"strings"
	"testing"
	"time"
	_ "time/tzdata" // America/Los_Angeles for TestParseHTTPDateIgnoresHostZone
)

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

// checkAgainstParseTime compares parseHTTPDate with net/http's ParseTime: the
// same instant for every date ParseTime reads in GMT or without a zone, and a
// refusal of every other zone, which ParseTime would read by the host's time
// zone database.
func checkAgainstParseTime(t *testing.T, s string) {
	t.Helper()
	got, ok := parseHTTPDate(s)
	want, err := http.ParseTime(s)
	switch {
	case ok && err != nil:
		t.Fatalf("parseHTTPDate(%q) = %v; http.ParseTime refuses it: %v", s, got, err)
	case ok && !got.Equal(want):
		t.Fatalf("parseHTTPDate(%q) = %v; http.ParseTime gives %v", s, got, want)
	case ok && got.Location() != time.UTC:
		t.Fatalf("parseHTTPDate(%q) is in %v, want UTC", s, got.Location())
	case !ok && err == nil && (strings.HasSuffix(s, " GMT") || !strings.Contains(s, ",")):
		if name, _ := want.Zone(); name == "GMT" || name == "UTC" {
			t.Fatalf("parseHTTPDate(%q) refused a GMT date that http.ParseTime reads as %v", s, want)
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
			if _, ok := parseHTTPDate(s); !ok {
				t.Fatalf("parseHTTPDate(%q) refused its own form", s)
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

var retryAfterSink time.Duration

// BenchmarkParseRetryAfter parses both forms of the header.
func BenchmarkParseRetryAfter(b *testing.B) {
	for _, v := range []string{"120", "Mon, 30 Nov 2026 12:00:30 GMT"} {
		b.Run(v[:3], func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				d, _ := ParseRetryAfter(v, raNow)
				retryAfterSink += d
			}
		})
	}
}
