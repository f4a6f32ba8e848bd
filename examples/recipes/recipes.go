// The code of the README's recipes, which a test of the root package holds
// the README to quote exactly; main.go runs each.

package main

import (
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"io"
	"log/slog"
	"net/http"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffhttp"
	"github.com/backoffgo/backoff/backoffsql"
)

// ConstantDelay retries every 500ms, five calls in all.
func ConstantDelay() backoff.Policy {
	return backoff.Must(backoff.NewExponential(backoff.Config{
		Base: 500 * time.Millisecond, Cap: 500 * time.Millisecond, MaxAttempts: 5,
	}))
}

// MaxElapsed stops retrying 30s after the first call began, without cutting
// a call short.
func MaxElapsed(ctx context.Context, policy backoff.Policy, call func(context.Context) error) error {
	r := &backoff.Retrier{Policy: policy, MaxElapsed: 30 * time.Second}
	return r.Do(ctx, call)
}

// sqlState stands for a database driver's error type.
type sqlState interface{ SQLState() string }

// ClassifyDriverErrors retries serialization failures and deadlocks and
// nothing else the driver reports.
func ClassifyDriverErrors(ctx context.Context, policy backoff.Policy, query func(context.Context) error) error {
	return backoff.Do(ctx, func(ctx context.Context) error {
		err := query(ctx)
		var s sqlState
		if errors.As(err, &s) && s.SQLState() != "40001" && s.SQLState() != "40P01" {
			return backoff.Permanent(err) // a constraint, a syntax error: retrying cannot help
		}
		return err
	}, policy)
}

// LogRetries logs each retry with log/slog.
func LogRetries(policy backoff.Policy) *backoff.Retrier {
	return &backoff.Retrier{
		Policy: policy,
		OnRetry: func(ctx context.Context, attempt int, err error, delay time.Duration) {
			slog.InfoContext(ctx, "retrying", "attempt", attempt, "err", err, "delay", delay)
		},
	}
}

// WhyHTTPGaveUp logs why the client stopped retrying: the response it
// returns for a status, with a nil error as http.Client does, does not say
// (backoffhttp.CheckResponse of it does).
func WhyHTTPGaveUp() *http.Client {
	r := backoffhttp.DefaultRetrier()
	r.OnDone = func(ctx context.Context, attempts int, err error) {
		if err != nil { // errors.Is(err, backoff.ErrExhausted), ErrBudget, ...
			slog.WarnContext(ctx, "gave up", "attempts", attempts, "err", err)
		}
	}
	return backoffhttp.NewClient(&backoffhttp.Transport{Retrier: r})
}

// HedgeSlowReads sends a second copy of a read that has not answered within
// 10ms, and takes the first good answer: zero Delay hedges after the p95 of
// recent latencies instead. Each copy after the first draws from the
// Retrier's Budget, as retries do.
func HedgeSlowReads() *http.Client {
	return backoffhttp.NewClient(&backoffhttp.Transport{
		Hedging: &backoffhttp.Hedging{Delay: 10 * time.Millisecond},
	})
}

// signer signs each attempt afresh, under the retrying Transport.
type signer struct {
	next http.RoundTripper
	key  []byte
}

func (s signer) RoundTrip(req *http.Request) (*http.Response, error) {
	req = req.Clone(req.Context()) // a RoundTripper must not modify its request
	now := time.Now().UTC().Format(time.RFC3339)
	mac := hmac.New(sha256.New, s.key)
	mac.Write([]byte(req.Method + " " + req.URL.RequestURI() + " " + now))
	req.Header.Set("X-Date", now)
	req.Header.Set("X-Signature", hex.EncodeToString(mac.Sum(nil)))
	return s.next.RoundTrip(req)
}

// SignEachAttempt returns a client whose every attempt carries a fresh
// signature.
func SignEachAttempt(key []byte) *http.Client {
	return backoffhttp.NewClient(&backoffhttp.Transport{Base: signer{next: http.DefaultTransport, key: key}})
}

// Items serves /items on mux from a dependency, called with a client that
// retries what is safe to retry; its failures that are the client's
// give-ups are marked, so that its callers do not retry what it retried
// already, and Handler marks them all while too many requests are retries.
func Items(mux *http.ServeMux) {
	client := backoffhttp.NewClient(nil) // GET, PUT, DELETE… retried on 429, 503 & co. and network errors
	mux.Handle("/items", backoffhttp.Handler(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		req, _ := http.NewRequestWithContext(r.Context(), http.MethodGet, "https://api.example.com/items", nil)
		resp, err := client.Do(req)
		if err != nil {
			backoffhttp.MarkFailure(w, err) // its give-up after retrying: callers must not retry it
			http.Error(w, err.Error(), http.StatusBadGateway)
			return
		}
		defer resp.Body.Close()
		backoffhttp.MarkFailure(w, backoffhttp.CheckResponse(resp)) // the same for a status it gave up on
		w.WriteHeader(resp.StatusCode)
		io.Copy(w, resp.Body)
	}), backoffhttp.ServerConfig{}))
}

// Transfer moves amount from one account to another in a serializable
// transaction, run again from BEGIN when the database asks for it.
func Transfer(ctx context.Context, db *sql.DB, from, to, amount int64) error {
	err := backoffsql.RunTx(ctx, db, &backoffsql.Options{Tx: &sql.TxOptions{Isolation: sql.LevelSerializable}},
		func(ctx context.Context, tx *sql.Tx) error { return transfer(ctx, tx, from, to, amount) })
	return err
}

// transfer is the transaction's work: it may run several times, and does
// nothing outside tx.
func transfer(ctx context.Context, tx *sql.Tx, from, to, amount int64) error {
	if _, err := tx.ExecContext(ctx, `UPDATE account SET balance = balance - $1 WHERE id = $2`, amount, from); err != nil {
		return err
	}
	_, err := tx.ExecContext(ctx, `UPDATE account SET balance = balance + $1 WHERE id = $2`, amount, to)
	return err
}
