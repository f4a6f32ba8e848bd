// Package backoffhttp retries HTTP requests with the policies of package
// backoff, in a package of its own so that backoff does not link net/http.
//
// [Transport] is an http.RoundTripper that retries what is safe to retry:
// idempotent requests whose body can be rewound, after a transient status
// (429, 503 and the like) or a network error, with the loop of a
// [backoff.Retrier] ([DefaultRetrier] by default), honouring Retry-After.
// [NewClient] puts one in an *http.Client:
//
//	client := backoffhttp.NewClient(nil)
//	resp, err := client.Get(url)
//
// For a status it gives up on, it returns the last response and a nil
// error, as http.Client does; [CheckResponse] returns why.
//
// A chain of services retries at one layer: a handler whose failure is its
// own retries' give-up says so with [MarkFailure] ([DontRetryHeader]), and
// a Transport does not retry that answer; [Handler] says so too when too
// many of a route's requests are retries (see package retryshare).
//
// The reasons behind these rules, with examples and how proxies treat the
// headers: https://github.com/backoffgo/backoff/blob/main/docs/http.md
package backoffhttp
