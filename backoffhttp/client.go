package backoffhttp

import (
	"net/http"
)

// NewClient returns an *http.Client that sends its requests through t, or
// through a Transport with every field at its default when t is nil. The
// client's Timeout, if the caller sets one, bounds the whole exchange,
// retries and waits included.
func NewClient(t *Transport) *http.Client {
	if t == nil {
		t = &Transport{}
	}
	return &http.Client{Transport: t}
}
