package backoffhttp

import (
	"math"
	"time"
)

// maxSeconds is the largest whole number of seconds a time.Duration holds.
const maxSeconds = math.MaxInt64 / int64(time.Second)

// ParseRetryAfter parses the value of an HTTP Retry-After header (RFC 9110,
// section 10.2.3) received at time now, and returns the delay it asks for and
// true, or 0 and false when value is not a valid Retry-After.
//
// It accepts delay-seconds, one or more ASCII digits with nothing else (no
// sign, no fraction), and an HTTP-date in any of its three forms, which
// must say GMT where the form has a zone.
// Surrounding spaces and tabs are ignored. A date at or before now yields 0.
// A delay too long for a time.Duration (about 292 years) saturates at the
// largest Duration instead of overflowing.
//
// Pass the response's own Date header as now when it has a valid one, so
// that a skewed local clock does not distort an HTTP-date.
func ParseRetryAfter(value string, now time.Time) (time.Duration, bool) {
	v := trimOWS(value)
	if v == "" {
		return 0, false
	}
	if secs, ok := parseSeconds(v); ok {
		if secs > maxSeconds {
			return math.MaxInt64, true
		}
		return time.Duration(secs) * time.Second, true
	}
	t, ok := parseHTTPDate(v)
	if !ok {
		return 0, false
	}
	return max(t.Sub(now), 0), true
}

// httpDateLayouts are the three forms of an HTTP-date (RFC 9110, section
// 5.6.7): IMF-fixdate, then the obsolete RFC 850 and asctime forms. "GMT"
// is literal text in the first two, so no other zone is accepted and the
// result never depends on the host's time zone; asctime has no zone and is
// read as UTC.
var httpDateLayouts = [...]string{
	"Mon, 02 Jan 2006 15:04:05 GMT",
	"Monday, 02-Jan-06 15:04:05 GMT",
	"Mon Jan _2 15:04:05 2006",
}

// parseHTTPDate parses an HTTP-date (RFC 9110, section 5.6.7) in any of its
// three forms, such as a Date or Retry-After header, and returns it in UTC
// and true, or the zero Time and false. It accepts what net/http's ParseTime
// accepts, except that the IMF-fixdate and RFC 850 forms must say GMT, as the
// RFC requires: ParseTime reads another zone abbreviation ("PST") by the
// host's time zone database, so its answer would depend on where it runs.
// A two-digit RFC 850 year is read as time.Parse reads it: 69–99 are
// 1969–1999, 00–68 are 2000–2068.
func parseHTTPDate(s string) (time.Time, bool) {
	for _, layout := range httpDateLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC(), true
		}
	}
	return time.Time{}, false
}

// parseSeconds parses a string of ASCII digits, saturating at maxSeconds+1.
func parseSeconds(s string) (int64, bool) {
	var n int64
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < '0' || c > '9' {
			return 0, false
		}
		if n <= maxSeconds {
			n = n*10 + int64(c-'0')
		}
	}
	return n, true
}

func trimOWS(s string) string {
	for len(s) > 0 && (s[0] == ' ' || s[0] == '\t') {
		s = s[1:]
	}
	for len(s) > 0 && (s[len(s)-1] == ' ' || s[len(s)-1] == '\t') {
		s = s[:len(s)-1]
	}
	return s
}
