package backoffotel

import (
	"fmt"
	"net/http"
	"testing"
)

// TestHTTPAttributes: the metrics' attributes of a request follow HTTP's
// conventions: a method outside RFC 9110's and PATCH is _OTHER, an empty
// one GET; the port is the URL's, or its scheme's.
func TestHTTPAttributes(t *testing.T) {
	for _, tt := range []struct{ method, url, want string }{
		{"", "https://example.com/x", "http.request.method=GET server.address=example.com server.port=443"},
		{"PURGE", "http://example.com", "http.request.method=_OTHER server.address=example.com server.port=80"},
		{"PATCH", "http://[::1]:8080/", "http.request.method=PATCH server.address=::1 server.port=8080"},
		{"GET", "unix:///x", "http.request.method=GET server.address="},
	} {
		req, err := http.NewRequest(tt.method, tt.url, nil)
		if err != nil {
			t.Fatal(err)
		}
		req.Method = tt.method
		got := ""
		for i, kv := range httpAttributes(req) {
			got += map[bool]string{true: "", false: " "}[i == 0] + fmt.Sprintf("%s=%s", kv.Key, kv.Value.String())
		}
		if got != tt.want {
			t.Errorf("%q %s: %s, want %s", tt.method, tt.url, got, tt.want)
		}
	}
	if got := httpAttributes(&http.Request{Method: "GET"}); len(got) != 1 {
		t.Errorf("a request without URL: %v, want the method alone", got)
	}
}
