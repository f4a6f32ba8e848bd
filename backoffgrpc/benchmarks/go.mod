module github.com/backoffgo/backoff/backoffgrpc/benchmarks

go 1.26.0

replace (
	github.com/backoffgo/backoff => ../../
	github.com/backoffgo/backoff/backoffgrpc => ../
)

require (
	github.com/backoffgo/backoff v0.1.0
	github.com/backoffgo/backoff/backoffgrpc v0.1.0
	github.com/failsafe-go/failsafe-go v0.9.8
	github.com/grpc-ecosystem/go-grpc-middleware/v2 v2.3.4
	google.golang.org/grpc v1.85.0
)

require (
	github.com/bits-and-blooms/bitset v1.24.4 // indirect
	golang.org/x/net v0.60.0 // indirect
	golang.org/x/sys v0.48.0 // indirect
	golang.org/x/text v0.42.0 // indirect
	google.golang.org/genproto/googleapis/rpc v0.0.0-20260817212433-ac3dfec99bb1 // indirect
	google.golang.org/protobuf v1.36.12 // indirect
)
