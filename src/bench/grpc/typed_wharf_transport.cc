// The homa-typed echo server and load transport: generated EchoWharf code
// over wharf endpoints.
#include "bench/grpc/typed_wharf_transport.h"

#include <chrono>
#include <string>
#include <vector>

#include "echo.wharf.h"
#include "wharf/endpoint.h"
#include "wharf/rpc.h"

namespace wharf::bench::grpc_node {
namespace {

using wharf::bench::EchoRequest;
using wharf::bench::EchoResponse;
using wharf::bench::EchoWharf;

// homa://ADDRESS:PORT of host `host` (/echo managed: a named endpoint on
// the host's wharfd).
std::string TypedServerAddress(const bench::NodeTransportConfig& c, int host) {
  return "homa://" + c.addresses.at(static_cast<size_t>(host)) + ":" + std::to_string(c.port) +
         (c.managed ? "/echo" : "");
}

// Echoes the payload, or answers response_bytes of zeros.
class EchoService final : public EchoWharf::Service {
 public:
  explicit EchoService(uint64_t response_bytes)
      : fixed_(response_bytes, '\0'), fixed_size_(response_bytes) {}
  Result<EchoResponse> Echo(const rpc::ServerContext&, const EchoRequest& request) override {
    EchoResponse response;
    if (request.has_response_bytes()) {
      response.mutable_payload()->assign(request.response_bytes(), '\0');
    } else if (fixed_size_ > 0) {
      response.set_payload(fixed_);
    } else {
      response.set_payload(request.payload());
    }
    return response;
  }

 private:
  const std::string fixed_;
  const uint64_t fixed_size_;
};

class TypedLoadTransport final : public bench::LoadTransport {
 public:
  TypedLoadTransport(std::unique_ptr<Endpoint> ep, const bench::NodeTransportConfig& c,
                     const Clock& clock, int max_outstanding)
      : ep_(std::move(ep)), clock_(clock), response_bytes_(c.response_bytes),
        calls_(static_cast<size_t>(max_outstanding)),
        sizes_(static_cast<size_t>(max_outstanding)) {
    for (size_t h = 0; h < c.addresses.size(); ++h) {
      stubs_.emplace_back(*ep_, TypedServerAddress(c, static_cast<int>(h)));
    }
  }

  Status Issue(uint32_t tag, int server, uint64_t bytes) override {
    if (tag >= calls_.size() || server < 0 || server >= static_cast<int>(stubs_.size())) {
      return InvalidArgumentError("tag or server out of range");
    }
    // The application's message holds its bytes: the typed call's cost
    // includes filling it, as a user's would.
    request_.mutable_payload()->resize(bytes);
    calls_[tag] = stubs_[static_cast<size_t>(server)].AsyncEcho(
        request_, {.deadline = std::chrono::seconds(10)});
    sizes_[tag] = bytes;
    return OkStatus();
  }

  std::string first_error() const override { return first_error_; }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override { return ep_->Stats(); }
  void BeginBurst() override { ep_->BeginBatch(); }
  void EndBurst() override { ep_->EndBatch(); }

  void Wait(TimeNs deadline, bench::CompletionSink& sink) override {
    if (Reap(sink) > 0) return;
    const DurationNs left = deadline - clock_.NowNs();
    if (left > 0) (void)ep_->WaitForAny(std::chrono::nanoseconds(left));
    (void)Reap(sink);
  }

 private:
  int Reap(bench::CompletionSink& sink) {
    int done = 0;
    for (size_t i = 0; i < calls_.size(); ++i) {
      rpc::PendingCall<EchoResponse>& call = calls_[i];
      if (!call.valid() || !call.done()) continue;
      Result<EchoResponse> answer = call.Wait(std::chrono::nanoseconds(0));
      const uint64_t want = response_bytes_ > 0 ? response_bytes_ : sizes_[i];
      bool ok = answer.ok() && answer->payload().size() == want;
      if (!ok && first_error_.empty()) {
        first_error_ = !answer.ok() ? answer.status().ToString()
                                    : "echo mismatch: " + std::to_string(answer->payload().size()) +
                                          " bytes back for " + std::to_string(want);
      }
      call = rpc::PendingCall<EchoResponse>();
      sink.Done(static_cast<uint32_t>(i), ok);
      ++done;
    }
    return done;
  }

  std::unique_ptr<Endpoint> ep_;
  const Clock& clock_;
  const uint64_t response_bytes_;
  std::vector<EchoWharf::Stub> stubs_;  // by host
  std::vector<rpc::PendingCall<EchoResponse>> calls_;  // by tag
  std::vector<uint64_t> sizes_;                        // request bytes by tag
  EchoRequest request_;  // reused: its payload keeps its capacity
  std::string first_error_;
};

}  // namespace

Result<std::unique_ptr<bench::EchoServer>> StartTypedWharfEchoServer(
    const bench::NodeTransportConfig& config) {
  WHARF_ASSIGN_OR_RETURN(
      std::unique_ptr<Endpoint> ep,
      Endpoint::Open(bench::WharfEndpointOptions(config, TypedServerAddress(config, config.host))));
  auto service = std::make_shared<EchoService>(config.response_bytes);
  WHARF_RETURN_IF_ERROR(service->Register(*ep));
  return bench::RunEndpointServer(std::move(ep), std::move(service));
}

Result<std::unique_ptr<bench::LoadTransport>> OpenTypedWharfLoadTransport(
    const bench::NodeTransportConfig& config, const Clock& clock, int max_outstanding) {
  const std::string& ip = config.addresses.at(static_cast<size_t>(config.host));
  WHARF_ASSIGN_OR_RETURN(
      std::unique_ptr<Endpoint> ep,
      Endpoint::Open(bench::WharfEndpointOptions(config, "homa://" + ip + ":0")));
  return std::unique_ptr<bench::LoadTransport>(
      new TypedLoadTransport(std::move(ep), config, clock, max_outstanding));
}

}  // namespace wharf::bench::grpc_node
