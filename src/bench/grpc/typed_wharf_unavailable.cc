// The `homa-typed` series in a wharf-grpc-node built without
// protoc-gen-wharf (cmake/WharfProto.cmake said why at configure time).
#include "bench/grpc/typed_wharf_transport.h"

namespace wharf::bench::grpc_node {
namespace {
Status Unavailable() {
  return UnimplementedError(
      "--proto homa-typed: this wharf-grpc-node was built without protoc-gen-wharf "
      "(install libprotoc-dev and zlib1g-dev, then rebuild)");
}
}  // namespace

Result<std::unique_ptr<bench::EchoServer>> StartTypedWharfEchoServer(
    const bench::NodeTransportConfig&) {
  return Unavailable();
}

Result<std::unique_ptr<bench::LoadTransport>> OpenTypedWharfLoadTransport(
    const bench::NodeTransportConfig&, const Clock&, int) {
  return Unavailable();
}

}  // namespace wharf::bench::grpc_node
