package backoffgrpc

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding/gzip"
	"google.golang.org/grpc/stats"
)

// outPayloads is a client's stats handler that records each message sent:
// its Payload's type and its lengths.
type outPayloads struct {
	mu  sync.Mutex
	out []string
}

func (p *outPayloads) TagRPC(ctx context.Context, _ *stats.RPCTagInfo) context.Context { return ctx }
func (p *outPayloads) HandleRPC(_ context.Context, s stats.RPCStats) {
	if o, ok := s.(*stats.OutPayload); ok {
		p.mu.Lock()
		defer p.mu.Unlock()
		p.out = append(p.out, fmt.Sprintf("%T %d %d %d", o.Payload, o.Length, o.CompressedLength, o.WireLength))
	}
}
func (p *outPayloads) TagConn(ctx context.Context, _ *stats.ConnTagInfo) context.Context {
	return ctx
}
func (p *outPayloads) HandleConn(context.Context, stats.ConnStats) {}

// TestStatsHandlerSizes: a stats handler (otelgrpc's, which records sizes)
// sees each message that an attempt of a stream sends with the lengths
// that it has without the interceptor, compressed or not, and a replay's
// messages again; its Payload is the interceptor's encoded value, as the
// StreamInterceptor's doc says.
func TestStatsHandlerSizes(t *testing.T) {
	texts := []string{"", "abc", strings.Repeat("x", 2000)}
	for _, opts := range [][]grpc.CallOption{nil, {grpc.UseCompressor(gzip.Name)}} {
		var got [2][]string
		for i, retried := range []bool{false, true} {
			p := &outPayloads{}
			c := client(t, ClientConfig{Retrier: immediate(2)})
			dialOpts := []grpc.DialOption{grpc.WithStatsHandler(p), grpc.WithDefaultCallOptions(opts...)}
			fails := 0
			if retried {
				dialOpts, fails = append(dialOpts, grpc.WithStreamInterceptor(c.StreamInterceptor())), 1
			}
			cc := dial(t, listen(t, &service{client: joinAll(fails)}), dialOpts...)
			if _, err := sendAll(context.Background(), cc, texts); err != nil {
				t.Fatal(err)
			}
			got[i] = p.out
		}
		var want []string
		for _, s := range got[0] {
			want = append(want, strings.Replace(s, "*backoffgrpc.msg", "*backoffgrpc.encoded", 1))
		}
		if want = append(want, want...); !slices.Equal(got[1], want) {
			t.Errorf("%v: OutPayloads %q through a replay, want %q", opts, got[1], want)
		}
	}
}
