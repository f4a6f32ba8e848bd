package backoffhttp

import (
	"net/http"
	"net/http/httptest"
	"testing"
)

// TestHandlerSuccessNeverCarriesTrueInAnyCase: saysTrue, by which
// Handler itself and clients read DontRetryHeader, takes "TRUE" as
// "true"; Handler takes away only the exact "true" from a success.
func TestHandlerSuccessNeverCarriesTrueInAnyCase(t *testing.T) {
	srv := httptest.NewServer(Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set(DontRetryHeader, "TRUE")
		w.WriteHeader(http.StatusOK)
	}), ServerConfig{Share: neverOver()}))
	defer srv.Close()
	resp, err := http.Get(srv.URL)
	if err != nil {
		t.Fatal(err)
	}
	resp.Body.Close()
	if saysTrue(resp.Header[DontRetryHeader]) {
		t.Errorf("a 200 carries %s: %q, which saysTrue reads as true", DontRetryHeader, resp.Header[DontRetryHeader])
	}
}
