// bench/grpc/sync_echo_server.h: the gRPC C++ echo server of wharf-grpc-node
// on gRPC's synchronous API (`--server-api sync`): an Echo::Service whose
// handler answers on gRPC's own thread pool, with ServerBuilder's defaults.
// It is the server a new user writes from gRPC's examples, the baseline the
// throughput issue quoted (40-43k RPC/s at 32 in flight here); the
// completion-queue server (echo_server.h) is the strongest baseline we
// know how to write and the default.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>

#include <grpcpp/grpcpp.h>

#include "echo.grpc.pb.h"
#include "bench/cluster_transports.h"
#include "wharf/result.h"

namespace wharf::bench::grpc_node {

class SyncEchoServer final : public bench::EchoServer {
 public:
  // As EchoServer::Start, without a thread count (gRPC's pool decides).
  static Result<std::unique_ptr<SyncEchoServer>> Start(const std::string& address,
                                                       uint64_t response_bytes = 0);
  ~SyncEchoServer() override;

  SyncEchoServer(const SyncEchoServer&) = delete;
  SyncEchoServer& operator=(const SyncEchoServer&) = delete;

  int port() const { return port_; }
  uint64_t served() const { return service_.served.load(std::memory_order_relaxed); }

  // Stops accepting; calls still open get a short grace. Idempotent.
  void Shutdown();
  void Stop() override { Shutdown(); }

 private:
  class Service final : public wharf::bench::Echo::Service {
   public:
    grpc::Status Echo(grpc::ServerContext* context, const wharf::bench::EchoRequest* request,
                      wharf::bench::EchoResponse* response) override;
    uint64_t response_bytes = 0;  // 0: echo
    std::atomic<uint64_t> served{0};
  };

  SyncEchoServer() = default;

  Service service_;
  std::unique_ptr<grpc::Server> server_;
  int port_ = 0;
  bool shut_down_ = false;
};

// The cluster-node factory for --proto grpc --server-api sync.
Result<std::unique_ptr<bench::EchoServer>> StartGrpcSyncEchoServer(
    const bench::NodeTransportConfig& config);

}  // namespace wharf::bench::grpc_node
