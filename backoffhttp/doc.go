// Package backoffhttp retries HTTP requests with the policies of package
// backoff. It is a package of its own so that a program that imports only
// backoff does not link net/http.
//
// [CheckResponse] turns a response into an error that [backoff.Do] retries
// for the transient statuses and that carries the server's Retry-After.
package backoffhttp
