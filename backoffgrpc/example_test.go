package backoffgrpc_test

import (
	"log"
	"time"

	"github.com/backoffgo/backoff"
	"github.com/backoffgo/backoff/backoffgrpc"
	"github.com/backoffgo/backoff/retryshare"
	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
)

// A channel whose calls are retried by backoffgrpc (UNAVAILABLE, and
// RESOURCE_EXHAUSTED with the server's pushback), with a budget shared by
// every call to the service, grpc-go's own retries off.
func ExampleNewClient() {
	budget := backoff.Must(backoff.NewBudget(backoff.BudgetConfig{}))
	policy := backoff.Must(backoff.NewFullJitter(backoff.Config{Base: 100 * time.Millisecond, Cap: 2 * time.Second, MaxAttempts: 3}, backoff.RuntimeRng{}))
	c, err := backoffgrpc.NewClient(backoffgrpc.ClientConfig{
		Retrier:        &backoff.Retrier{Policy: policy, Budget: budget},
		AttemptTimeout: time.Second, // only for methods that may run twice
	})
	if err != nil {
		log.Fatal(err)
	}
	conn, err := grpc.NewClient("dns:///inventory.internal:443",
		append(c.DialOptions(), grpc.WithTransportCredentials(insecure.NewCredentials()))...)
	if err != nil {
		log.Fatal(err)
	}
	defer conn.Close()
	// Use conn with the service's generated client.
}

// A server whose handlers' own retries count: a handler's error that is,
// or wraps, the give-up of its loop, or any failure while more than 10 %
// of the calls it serves are retries, tells its callers not to retry.
// ServerConfig{} would count each interceptor's calls apart; one Share
// counts unary calls and streams together.
func ExampleUnaryServerInterceptor() {
	share := backoff.Must(retryshare.New(retryshare.Config{}))
	cfg := backoffgrpc.ServerConfig{Share: share}
	srv := grpc.NewServer(
		grpc.ChainUnaryInterceptor(backoffgrpc.UnaryServerInterceptor(cfg)),
		grpc.ChainStreamInterceptor(backoffgrpc.StreamServerInterceptor(cfg)),
	)
	_ = srv // register the services, then srv.Serve(listener)
}
