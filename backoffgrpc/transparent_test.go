package backoffgrpc

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"testing"

	"github.com/backoffgo/backoff"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// refuser starts, on loopback TCP, an HTTP/2 server that speaks just
// enough gRPC for a failing call: it refuses the first stream it is sent
// unprocessed (RST_STREAM REFUSED_STREAM), which grpc-go retries
// transparently, and answers every other one, once its request has come,
// Trailers-Only UNAVAILABLE. It
// returns its address and the number of streams it was sent.
func refuser(t *testing.T) (string, *atomic.Int64) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	streams := new(atomic.Int64)
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go serveRefuser(conn, streams) // until the client closes conn
		}
	}()
	return lis.Addr().String(), streams
}

func serveRefuser(conn net.Conn, streams *atomic.Int64) {
	defer conn.Close()
	if _, err := io.ReadFull(conn, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	fr := http2.NewFramer(conn, conn)
	if fr.WriteSettings() != nil {
		return
	}
	var block bytes.Buffer
	enc := hpack.NewEncoder(&block)
	var refused uint32 // the stream refused on conn, if any
	for {
		f, err := fr.ReadFrame()
		if err != nil {
			return
		}
		switch f := f.(type) {
		case *http2.SettingsFrame:
			if !f.IsAck() {
				err = fr.WriteSettingsAck()
			}
		case *http2.PingFrame:
			if !f.IsAck() {
				err = fr.WritePing(true, f.Data)
			}
		case *http2.HeadersFrame:
			if streams.Add(1) == 1 {
				refused = f.StreamID
				err = fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
			}
		case *http2.DataFrame:
			// Answer once the whole request has come, as a gRPC server
			// does: an answer that overtakes the request's DATA makes
			// grpc-go's SendMsg fail with a plain EOF ("max retries
			// exhausted: ... EOF" with its retries on), which is not the
			// failure under test.
			if !f.StreamEnded() || f.StreamID == refused {
				break
			}
			block.Reset()
			for _, hf := range []hpack.HeaderField{
				{Name: ":status", Value: "200"},
				{Name: "content-type", Value: "application/grpc"},
				{Name: "grpc-status", Value: "14"},
				{Name: "grpc-message", Value: "down"},
			} {
				enc.WriteField(hf)
			}
			err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: block.Bytes(), EndStream: true, EndHeaders: true})
		}
		if err != nil {
			return
		}
	}
}

// TestTransparentRetryCounts: grpc-go's transparent retry of an attempt
// that no server processed, which it makes even with grpc.WithDisableRetry,
// counts as one of its attempts, as UnaryInterceptor says: on a channel
// whose retries were turned off by hand, the interceptor stands back after
// it (fewer attempts, not more). With DialOptions, which need no count, and
// on a channel with grpc-go's retries on, the server sees the refused
// stream and 3 attempts.
func TestTransparentRetryCounts(t *testing.T) {
	for _, tt := range []struct {
		name    string
		opts    func(c *Client) []grpc.DialOption
		streams int64
		reason  error
	}{
		{"WithDisableRetry by hand", func(c *Client) []grpc.DialOption {
			return []grpc.DialOption{grpc.WithDisableRetry(), grpc.WithUnaryInterceptor(c.UnaryInterceptor())}
		}, 2, backoff.ErrRetriedBelow},
		{"DialOptions", func(c *Client) []grpc.DialOption { return c.DialOptions() }, 4, backoff.ErrExhausted},
		{"grpc-go's retries on", func(c *Client) []grpc.DialOption {
			return []grpc.DialOption{grpc.WithUnaryInterceptor(c.UnaryInterceptor())}
		}, 4, backoff.ErrRetriedBelow},
	} {
		t.Run(tt.name, func(t *testing.T) {
			addr, streams := refuser(t)
			c := client(t, ClientConfig{Retrier: immediate(3)})
			cc := dial(t, addr, append(tt.opts(c), grpc.WithDefaultServiceConfig(retryConfig))...)
			_, err := call(context.Background(), cc, "hi")
			if status.Code(err) != codes.Unavailable || !errors.Is(err, tt.reason) || streams.Load() != tt.streams {
				t.Errorf("error %v after %d streams, want Unavailable, %v, after %d", err, streams.Load(), tt.reason, tt.streams)
			}
		})
	}
}
