// Package backoffhttp retries HTTP requests with the policies of package
// backoff. It is a package of its own so that a program that imports only
// backoff does not link net/http.
//
// [Transport] is an http.RoundTripper that retries what is safe to retry:
// idempotent requests whose body can be rewound, after a transient status
// (429, 503 and the like) or a network error, with full jitter, honouring
// Retry-After. [NewClient] puts one in an *http.Client:
//
//	client := backoffhttp.NewClient(nil)
//	resp, err := client.Get(url)
//
// [CheckResponse] turns a response into an error that [backoff.Do] retries
// for the transient statuses and that carries the server's Retry-After, for
// a retry loop written by hand.
package backoffhttp
