// bench/grpc/echo_server.h: the gRPC C++ echo server of wharf-grpc-node, on
// gRPC's asynchronous completion-queue API: `threads` threads, each owning
// one completion queue with a few calls posted on it, answer Echo with the
// payload (or a response of the requested size, echo.proto). It is the
// cluster node's EchoServer (bench/cluster_transports.h) for --proto
// grpc.
//
// It does not send load (grpc_load_transport.h) or parse flags
// (grpc_node_main.cc).
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include <grpcpp/grpcpp.h>

#include "echo.grpc.pb.h"
#include "bench/cluster_transports.h"
#include "wharf/result.h"

namespace wharf::bench::grpc_node {

// Responses of at most this many bytes are served; larger wanted sizes are
// refused with INVALID_ARGUMENT (the request is input).
inline constexpr uint64_t kMaxEchoBytes = 64ull << 20;

// The cluster node's server threads (completion queues).
inline constexpr int kServerThreads = 2;

// Owns the grpc::Server, its completion queues and threads. Start it once;
// the destructor shuts it down and joins the threads. served() may be read
// from any thread.
class EchoServer final : public bench::EchoServer {
 public:
  // Listens on `address` ("198.18.0.1:7000", "127.0.0.1:0" for any port)
  // without TLS, as the wharf and kernel baselines run without encryption.
  // `response_bytes` > 0: a request without its own response_bytes is
  // answered with that many bytes instead of its payload (--response-size).
  static Result<std::unique_ptr<EchoServer>> Start(const std::string& address, int threads,
                                                   uint64_t response_bytes = 0);
  ~EchoServer() override;

  EchoServer(const EchoServer&) = delete;
  EchoServer& operator=(const EchoServer&) = delete;

  int port() const { return port_; }
  uint64_t served() const { return served_.load(std::memory_order_relaxed); }

  // Stops accepting, fails calls still open, drains the queues, joins.
  // Idempotent.
  void Shutdown();
  void Stop() override { Shutdown(); }

 private:
  EchoServer() = default;
  void Serve(grpc::ServerCompletionQueue* cq);

  wharf::bench::Echo::AsyncService service_;
  std::unique_ptr<grpc::Server> server_;
  std::vector<std::unique_ptr<grpc::ServerCompletionQueue>> queues_;
  std::vector<std::thread> threads_;
  std::atomic<uint64_t> served_{0};
  uint64_t response_bytes_ = 0;  // 0: echo
  int port_ = 0;
  bool shut_down_ = false;
};

// "ADDRESS[config.host]:config.port", after checking the node is a grpc
// one and its host is among the addresses (both servers' factories).
Result<std::string> GrpcServerAddress(const bench::NodeTransportConfig& config);

// The cluster-node factory for --proto grpc: serves on
// config.addresses[config.host]:config.port with kServerThreads threads,
// answering config.response_bytes bytes when set.
Result<std::unique_ptr<bench::EchoServer>> StartGrpcEchoServer(
    const bench::NodeTransportConfig& config);

}  // namespace wharf::bench::grpc_node
