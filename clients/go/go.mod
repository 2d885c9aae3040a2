// Go stubs of the ovserve.v1 gRPC contract, generated from proto/ by
// protoc-gen-go and protoc-gen-go-grpc (regenerate with
// python tools/generate_language_stubs.py). Import ovserve/clients/go/ovserve/v1.
//
// No require lines: CI reaches no Go module proxy, so the versions cannot be
// resolved (nor a go.sum written) here. `go mod tidy` adds them; the stubs are
// built in CI against Debian bookworm's grpc-go 1.33.3, protobuf-go 1.28.1 and
// genproto, the oldest they need being grpc-go 1.32 (SupportPackageIsVersion7).
module ovserve/clients/go

go 1.19
