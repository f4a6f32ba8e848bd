package backoffotel_test

import (
	"bytes"
	"io"
	"net"
	"testing"
	"time"

	"go.opentelemetry.io/otel/codes"
	"golang.org/x/net/http2"
	"golang.org/x/net/http2/hpack"
	grpccodes "google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// refusingServer starts, on loopback TCP, an HTTP/2 server that speaks just
// enough gRPC to fail calls: it refuses the first stream of each
// connection unprocessed (RST_STREAM REFUSED_STREAM), which grpc-go
// retries transparently, and answers each other stream, once its request
// has come, Trailers-Only UNAVAILABLE. It returns its address.
func refusingServer(t *testing.T) string {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { lis.Close() })
	go func() {
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			go refuseFirst(conn)
		}
	}()
	return lis.Addr().String()
}

// refuseFirst serves conn as refusingServer says, until it fails.
func refuseFirst(conn net.Conn) {
	defer conn.Close()
	if _, err := io.ReadFull(conn, make([]byte, len(http2.ClientPreface))); err != nil {
		return
	}
	fr := http2.NewFramer(conn, conn)
	var trailers bytes.Buffer
	enc := hpack.NewEncoder(&trailers)
	for _, f := range []hpack.HeaderField{{Name: ":status", Value: "200"}, {Name: "content-type", Value: "application/grpc"},
		{Name: "grpc-status", Value: "14"}, {Name: "grpc-message", Value: "injected"}} {
		enc.WriteField(f)
	}
	refused := uint32(0)
	err := fr.WriteSettings()
	for err == nil {
		var f http2.Frame
		if f, err = fr.ReadFrame(); err != nil {
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
			if refused == 0 {
				refused = f.StreamID
				err = fr.WriteRSTStream(f.StreamID, http2.ErrCodeRefusedStream)
			}
		case *http2.DataFrame:
			if f.StreamEnded() && f.StreamID != refused {
				err = fr.WriteHeaders(http2.HeadersFrameParam{StreamID: f.StreamID, BlockFragment: trailers.Bytes(), EndStream: true, EndHeaders: true})
			}
		}
	}
}

// TestGRPCTransparentRetry: a call whose first attempt the server refuses
// unprocessed, which grpc-go retries transparently, then fails three
// times: four attempts' spans under the call's, one transparent retry and
// the Client's 2 retries recorded, exhausted.
func TestGRPCTransparentRetry(t *testing.T) {
	addr := refusingServer(t)
	tm := newTelemetry()
	if err := check(dial(t, tm, addr, false)); status.Code(err) != grpccodes.Unavailable {
		t.Fatalf("call: %v, want UNAVAILABLE", err)
	}
	spans, err := tm.ended(5)
	if err != nil {
		t.Fatal(err)
	}
	// grpc-go ends the refused attempt with or without an error, as the
	// refusal races its send (Unset in 1 of 30 runs): not checked.
	checkGRPCSpans(t, spans, checkMethod, codes.Error, "exhausted", spans[1].Status.Code, codes.Error, codes.Error, codes.Error)
	checkGRPCMetrics(t, tm, checkMethod, addr, want{retries: 2, transparent: 1, delay: 2 * time.Millisecond, reason: "exhausted"})
}
