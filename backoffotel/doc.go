// Package backoffotel traces and measures the retries of backoffhttp,
// backoffgrpc and backoffsql with OpenTelemetry. Each constructor builds
// the whole stack in its one working order, so that the call's span is
// always above the retries and each attempt's span below them:
//
//	rt, err := backoffotel.NewTransport(&backoffhttp.Transport{}, backoffotel.Config{})
//	client := &http.Client{Transport: rt}
//
//	opts, err := backoffotel.DialOptions(backoffgrpc.ClientConfig{}, backoffotel.Config{})
//	conn, err := grpc.NewClient(target, append(opts, creds)...)
//
//	tx, err := backoffotel.NewTxRunner(&backoffsql.Options{}, backoffotel.Config{})
//	err = tx.RunTx(ctx, db, fn)
//
// A call is one span (HTTP and gRPC) whose children are its attempts'
// client spans, made by otelhttp and otelgrpc, a retry's with
// http.request.resend_count, as OpenTelemetry's conventions describe
// resends. Every call records, with the protocol's attributes, its
// retries, the total wait before them and, when it stops without success,
// a give-up with its [ReasonKey]:
//
//	           retries                                 retry delay (s)                             give-ups
//	gRPC       grpc.client.call.retries (A96)          grpc.client.call.retry_delay (A96)          backoff.grpc.client.call.give_ups
//	           grpc.client.call.transparent_retries (A96)
//	HTTP       backoff.http.client.request.retries     backoff.http.client.request.retry_delay     backoff.http.client.request.give_ups
//	SQL        backoff.sql.client.transaction.retries  backoff.sql.client.transaction.retry_delay  backoff.sql.client.transaction.give_ups
//
// A hedged call also records its hedges (copies after the first) in
// grpc.client.call.hedges (A96) or backoff.http.client.request.hedges, a
// histogram of the same shape, and a win by a hedge in
// backoff.grpc.client.call.hedge_wins or
// backoff.http.client.request.hedge_wins.
//
// The gRPC histograms are those of gRFC A96; the others are this module's
// names of the same shape, OpenTelemetry's conventions having none. A
// Budget's refusals are the give-ups of reason "budget", a Throttle's
// those of reason "throttled"; the refusals of a server whose retry share
// (retryshare) refused the answer, or whose own loops had retried, are
// those of reason "retried_below".
//
// It is a module of its own, so that neither backoff nor backoffgrpc
// requires OpenTelemetry.
package backoffotel
