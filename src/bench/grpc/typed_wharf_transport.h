// bench/grpc/typed_wharf_transport.h: the `homa-typed` series of
// wharf-grpc-node: wharf over homa:// through the code protoc-gen-wharf
// generates from echo.proto, the very file the gRPC series uses, so that a
// run compares gRPC and wharf on one .proto, and wharf's typed calls with
// its raw Endpoint::Call (the `homa` series) on the same bytes.
//
// The server is an EchoWharf::Service (echo.wharf.h, generated with
// class_suffix=Wharf so that it can sit beside gRPC's Echo in one program);
// the client keeps up to max_outstanding AsyncEcho calls in flight on one
// endpoint per client thread, as the raw wharf transport does with ICall.
// Embedded or managed, like every wharf series. An answer whose payload is
// not as long as the request (or the fixed response size) fails its RPC.
//
// Built only with protoc-gen-wharf (WHARF_PROTO_BUILT); otherwise both
// functions return kUnimplemented saying so (typed_wharf_unavailable.cc).
#pragma once

#include <memory>

#include "base/clock.h"
#include "bench/cluster_load.h"
#include "bench/cluster_transports.h"
#include "wharf/result.h"

namespace wharf::bench::grpc_node {

Result<std::unique_ptr<bench::EchoServer>> StartTypedWharfEchoServer(
    const bench::NodeTransportConfig& config);

Result<std::unique_ptr<bench::LoadTransport>> OpenTypedWharfLoadTransport(
    const bench::NodeTransportConfig& config, const Clock& clock, int max_outstanding);

}  // namespace wharf::bench::grpc_node
