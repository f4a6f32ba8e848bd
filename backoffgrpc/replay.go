package backoffgrpc

import (
	"strings"

	"google.golang.org/grpc"
	"google.golang.org/grpc/encoding"
	"google.golang.org/grpc/mem"
)

// A stream keeps what it sent as the bytes its codec made of each message
// when SendMsg was called, and every attempt sends those bytes, so that a
// replay is what the first attempt sent whatever the caller does with its
// messages afterwards (reuses a buffer or a message for the next one).
//
// grpc.PreparedMsg (grpc-go v1.85's preloader.go), which encodes and
// compresses as the attempt's stream would, does not serve: its Encode
// needs the attempt's stream, and there is none while the first attempt
// could not be opened (the caller sends meanwhile); it reads the stream's
// Context, which commits grpc-go's own attempt (no transparent retry or
// retryPolicy below the interceptor after that); and a PreparedMsg does
// not tell its size, which the byte bound needs. So the stream encodes
// with the codec that grpc-go would choose for the call's options
// (callCodec), and gives every attempt that codec, wrapped to send an
// *encoded as it is (grpc.ForceCodecV2): the attempt's compressor then
// compresses it as it would the message, and the content-subtype on the
// wire stays the one the options make.

// msgHeaderLen is the size of the header that gRPC puts before each
// message: a stream's kept bytes count it for each message, as grpc-go's
// retry buffer does.
const msgHeaderLen = 5

// encoded is a message as the call's codec encoded it; replayCodec sends
// it as it is.
type encoded struct {
	data mem.BufferSlice
	own1 [1]mem.Buffer // data's one buffer once owned
}

// size is what a kept message counts toward MaxReplayBytes.
func (e *encoded) size() int { return e.data.Len() + msgHeaderLen }

// replayCodec is the codec of every attempt of a stream: the call's, which
// sends an *encoded as it is.
type replayCodec struct {
	encoding.CodecV2        // the call's
	subtype          string // the content-subtype that the call's options give
}

func (c *replayCodec) Marshal(v any) (mem.BufferSlice, error) {
	if e, ok := v.(*encoded); ok {
		return e.data, nil
	}
	return c.CodecV2.Marshal(v)
}

// encode returns m encoded by the codec.
func (c *replayCodec) encode(m any) (*encoded, error) {
	data, err := c.CodecV2.Marshal(m)
	if err != nil {
		return nil, err
	}
	return &encoded{data: data}, nil
}

// Name returns the call's content-subtype: grpc-go sends the codec's name
// when the options give none, and the options' content-subtype otherwise.
func (c *replayCodec) Name() string { return c.subtype }

// own moves e's bytes to a buffer of their own, to be kept: a codec may
// return the message's own bytes, or buffers of a pool that grpc-go frees
// once they are sent.
func (e *encoded) own() {
	e.own1[0] = mem.SliceBuffer(e.data.Materialize())
	e.data.Free()
	e.data = e.own1[:]
}

// callCodec returns the codec that grpc-go v1.85 uses for a call with
// opts (its setCallInfoCodec), as a replayCodec: the last ForceCodecV2,
// ForceCodec or CallCustomCodec option's codec, else the codec registered
// for the last CallContentSubtype, else proto's; and the content-subtype
// that grpc-go sends: the last CallContentSubtype's, else, for a codec of
// ForceCodecV2 or ForceCodec, its name in lower case (a grpc.Codec of
// CallCustomCodec has no name: none). It returns nil when no codec is
// registered for the content-subtype: grpc-go then fails the call.
func callCodec(opts []grpc.CallOption) *replayCodec {
	var codec encoding.CodecV2
	var subtype string
	for _, o := range opts {
		switch o := o.(type) {
		case grpc.ForceCodecV2CallOption:
			codec = o.CodecV2
		case grpc.ForceCodecCallOption:
			codec = bytesCodec{o.Codec, o.Codec.Name()}
		case grpc.CustomCodecCallOption:
			codec = bytesCodec{o.Codec, ""}
		case grpc.ContentSubtypeCallOption:
			subtype = o.ContentSubtype
		}
	}
	switch {
	case codec != nil:
		if subtype == "" {
			subtype = strings.ToLower(codec.Name())
		}
	case subtype == "":
		codec = registeredCodec("proto")
	default:
		if codec = registeredCodec(subtype); codec == nil {
			return nil
		}
	}
	return &replayCodec{CodecV2: codec, subtype: subtype}
}

// registeredCodec returns the codec registered for a content-subtype, as
// grpc-go looks it up: an encoding.Codec first, then an encoding.CodecV2.
func registeredCodec(subtype string) encoding.CodecV2 {
	if c := encoding.GetCodec(subtype); c != nil {
		return bytesCodec{c, c.Name()}
	}
	return encoding.GetCodecV2(subtype)
}

// bytesCodec is a codec of byte slices (encoding.Codec, or grpc.Codec) as
// an encoding.CodecV2.
type bytesCodec struct {
	codec interface {
		Marshal(v any) ([]byte, error)
		Unmarshal(data []byte, v any) error
	}
	name string
}

func (c bytesCodec) Marshal(v any) (mem.BufferSlice, error) {
	b, err := c.codec.Marshal(v)
	if err != nil {
		return nil, err
	}
	return mem.BufferSlice{mem.SliceBuffer(b)}, nil
}

func (c bytesCodec) Unmarshal(data mem.BufferSlice, v any) error {
	return c.codec.Unmarshal(data.Materialize(), v)
}

func (c bytesCodec) Name() string { return c.name }
