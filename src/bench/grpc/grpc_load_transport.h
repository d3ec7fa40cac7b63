// bench/grpc/grpc_load_transport.h: the client side of wharf-grpc-node, a
// cluster-node LoadTransport (bench/cluster_load.h) on gRPC's
// asynchronous completion-queue API, so that many RPCs are in flight without
// a thread each. One transport serves one client thread: its own completion
// queue and its own channel (HTTP/2 connection) to every other host, as each
// wharf client thread has its own endpoint.
//
// Issue starts an Echo call whose completion-queue tag is the call's slot;
// Wait drains the queue. A response that is not as long as the request (or,
// with config.response_bytes N > 0, not N bytes long) is an echo mismatch:
// the RPC fails (and first_error says so), never a crash.
#pragma once

#include <grpcpp/grpcpp.h>

#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "echo.grpc.pb.h"
#include "bench/cluster_transports.h"

namespace wharf::bench::grpc_node {

class GrpcLoadTransport final : public bench::LoadTransport {
 public:
  // Connects to every host but `config.host` (config.addresses[h]:port) and
  // sends each one uncounted 1-byte RPC, so that connection set-up (tens of
  // ms) is not measured; waits for those at most `warm_up_ns` (a host not up
  // by then is only slower to answer at first).
  static Result<std::unique_ptr<GrpcLoadTransport>> Open(const bench::NodeTransportConfig& config,
                                                         const Clock& clock, int max_outstanding,
                                                         DurationNs warm_up_ns = 3 * kNsPerSec);
  // Cancels what is still in flight and drains the queue.
  ~GrpcLoadTransport() override;

  GrpcLoadTransport(const GrpcLoadTransport&) = delete;
  GrpcLoadTransport& operator=(const GrpcLoadTransport&) = delete;

  Status Issue(uint32_t tag, int server, uint64_t bytes) override;
  void Wait(TimeNs deadline, bench::CompletionSink& sink) override;
  std::string first_error() const override { return first_error_; }

 private:
  // One Echo call. Owned by the transport; in flight from Issue until its
  // completion comes off the queue, whatever the driver did meanwhile.
  struct Call {
    std::optional<grpc::ClientContext> context;  // a context serves one call
    wharf::bench::EchoRequest request;
    wharf::bench::EchoResponse response;
    grpc::Status status;
    std::unique_ptr<grpc::ClientAsyncResponseReader<wharf::bench::EchoResponse>> reader;
    uint32_t tag = 0;
    uint64_t bytes = 0;
    // Not reported: a warm-up call, or one the driver gave up on (its tag
    // was issued again).
    bool counted = false;
  };

  GrpcLoadTransport(const Clock& clock, int max_outstanding, uint64_t response_bytes);
  void Start(Call* call, int server, uint64_t bytes);
  // Takes a finished call off the queue's hands; true if it was reported.
  bool Finish(Call* call, bench::CompletionSink* sink);
  Call* TakeCall();

  const Clock& clock_;
  const uint64_t response_bytes_;  // what every answer must hold; 0: the request's size
  std::vector<std::unique_ptr<wharf::bench::Echo::Stub>> stubs_;  // by host; null for this one
  grpc::CompletionQueue queue_;
  std::vector<std::unique_ptr<Call>> calls_;  // every call ever made, reused
  std::vector<Call*> free_;
  std::vector<Call*> by_tag_;  // the counted call in flight per tag, or null
  int in_flight_ = 0;
  std::string payload_;  // request bytes, grown to the largest request
  std::string first_error_;
};

// The cluster-node factory for --proto grpc.
Result<std::unique_ptr<bench::LoadTransport>> OpenGrpcLoadTransport(
    const bench::NodeTransportConfig& config, const Clock& clock, int max_outstanding);

}  // namespace wharf::bench::grpc_node
