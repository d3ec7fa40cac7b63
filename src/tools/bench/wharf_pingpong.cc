// wharf ping-pong and goodput through the public API.
#include "tools/bench/wharf_pingpong.h"

#include <sys/socket.h>

#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <thread>

#include "tools/bench/affinity.h"
#include "tools/bench/child_process.h"
#include "tools/bench/sockets.h"
#include "wharf/endpoint.h"

namespace wharf::tools::bench {
namespace {

constexpr uint32_t kEcho = 1;
constexpr uint32_t kStop = 3;
constexpr uint32_t kSink = 4;  // takes a request, answers empty (goodput)
constexpr int kServerOpenFailed = 4;

std::string Uri(const std::string& scheme, const std::string& address, uint16_t port) {
  bool v6 = address.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

// A free UDP (homa) or TCP port for the server (bound and released here; the
// forked server binds it again). The warm-up absorbs the start-up race.
Result<uint16_t> FreePort(const std::string& scheme, const std::string& address) {
  WHARF_ASSIGN_OR_RETURN(SocketAddress a, ParseSocketAddress(address, 0));
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd,
                         OpenSocket(a.family(), scheme == "tcp" ? SOCK_STREAM : SOCK_DGRAM));
  if (::bind(fd.get(), a.get(), a.length) != 0) return ErrnoToStatus(errno, "bind " + address);
  return LocalPort(fd.get());
}

EndpointOptions Options(const std::string& uri, bool spin) {
  return {.address = uri, .settings = {{"endpoint.spin", spin ? "1s" : "0ns"}}};
}

int ServeWharf(const std::string& uri, bool spin, const Clock& clock, TimeNs deadline_ns) {
  auto ep = Endpoint::Open(Options(uri, spin));
  if (!ep.ok()) return kServerOpenFailed;
  std::atomic<bool> stop{false};
  (void)(*ep)->Serve(kEcho, [](const RpcContext&, Buffer b) { return Result<Buffer>(std::move(b)); });
  (void)(*ep)->Serve(kSink, [](const RpcContext&, Buffer) { return Result<Buffer>(Buffer()); });
  (void)(*ep)->Serve(kStop, [&stop](const RpcContext&, Buffer) {
    stop = true;
    return Result<Buffer>(Buffer());
  });
  while (!stop && clock.NowNs() < deadline_ns) (void)(*ep)->Run(std::chrono::milliseconds(10));
  (void)(*ep)->Run(std::chrono::milliseconds(20));  // let the stop reply go and be acked
  return 0;
}

class WharfClient final : public PingPongClient {
 public:
  WharfClient(std::unique_ptr<Endpoint> ep, std::string target, size_t size, const Clock& clock)
      : ep_(std::move(ep)), target_(std::move(target)), size_(size), clock_(clock) {}

  Result<Outcome> RoundTrip(uint64_t seq, TimeNs deadline_ns) override {
    Buffer request = Buffer::Allocate(size_);
    if (size_ > 0) std::memset(request.data(), 0x5a, size_);
    StampSequence(seq, request.data(), size_);
    Completion c = ep_->ICall(target_, kEcho, std::move(request), {.deadline = {}});
    Status s = c.Wait(std::chrono::nanoseconds(std::max<TimeNs>(0, deadline_ns - clock_.NowNs())));
    if (!c.done()) {
      c.Cancel();
      return Outcome::kTimedOut;
    }
    WHARF_RETURN_IF_ERROR(s);
    Buffer reply = c.TakeMessage();
    if (reply.size() != size_ || !HasSequence(seq, reply.data(), size_)) {
      return DataLossError("echo of request " + std::to_string(seq) + " came back different");
    }
    return Outcome::kOk;
  }

  void Finish() override {
    (void)ep_->Call(target_, kStop, Buffer(), {.deadline = std::chrono::seconds(1)});
  }

 private:
  std::unique_ptr<Endpoint> ep_;
  std::string target_;
  size_t size_;
  const Clock& clock_;
};

// The forked server binds its port only after the fork returns: a call that
// gets there first meets "port unreachable" (homa) or "connection refused"
// (tcp) at once. Calls until the server answers, for up to 10 s.
Status WaitForServer(Endpoint& ep, const std::string& target, size_t bytes, const Clock& clock) {
  const TimeNs give_up_ns = clock.NowNs() + 10 * kNsPerSec;
  while (true) {
    auto r = ep.Call(target, kSink, Buffer::Allocate(bytes), {.deadline = std::chrono::seconds(2)});
    if (r.ok()) return OkStatus();
    if (clock.NowNs() > give_up_ns) return r.status().WithContext("waiting for the server " + target);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

}  // namespace

Result<PingPongResult> RunWharfPingPong(const PingPongOptions& options, const std::string& scheme,
                                        const Clock& clock, const ProgressFn& progress) {
  WHARF_RETURN_IF_ERROR(ValidatePingPongOptions(options, 64u << 20));
  uint16_t port = options.port;
  if (port == 0) {
    WHARF_ASSIGN_OR_RETURN(port, FreePort(scheme, options.address));
  }
  const bool spin = options.mode == WaitMode::kBusyPoll;
  const std::string target = Uri(scheme, options.address, port);
  const PinPlan pinning = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  const TimeNs server_deadline_ns = ServerDeadline(options, clock);
  WHARF_ASSIGN_OR_RETURN(
      ChildProcess server, ChildProcess::Fork(pinning.pin ? pinning.server_cpu : -1, [&]() {
        return ServeWharf(target, spin, clock, server_deadline_ns);
      }));
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep,
                         Endpoint::Open(Options(Uri(scheme, options.address, 0), spin)));
  WHARF_RETURN_IF_ERROR(WaitForServer(*ep, target, options.size_bytes, clock));
  WharfClient client(std::move(ep), target, options.size_bytes, clock);
  const std::string what = "wharf " + scheme + " " + std::string(WaitModeName(options.mode)) + " " +
                           std::to_string(options.size_bytes) + " B";
  WHARF_ASSIGN_OR_RETURN(PingPongResult result,
                         RunPingPongLoop(options, pinning, clock, progress, what, server, client));
  result.port = port;
  return result;
}

Result<GoodputResult> RunWharfGoodput(const GoodputOptions& options, const Clock& clock) {
  WHARF_ASSIGN_OR_RETURN(uint16_t port, FreePort(options.scheme, options.address));
  const std::string target = Uri(options.scheme, options.address, port);
  const PinPlan pinning = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  const TimeNs server_deadline_ns =
      clock.NowNs() + static_cast<TimeNs>((options.seconds + 10) * kNsPerSec);
  WHARF_ASSIGN_OR_RETURN(
      ChildProcess server, ChildProcess::Fork(pinning.pin ? pinning.server_cpu : -1, [&]() {
        return ServeWharf(target, /*spin=*/true, clock, server_deadline_ns);
      }));
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep,
                         Endpoint::Open(Options(Uri(options.scheme, options.address, 0), true)));
  WHARF_ASSIGN_OR_RETURN(ScopedCpuPin pin_client,
                         ScopedCpuPin::Pin(pinning.pin ? pinning.client_cpu : -1));
  // Warm up: one message end to end (also waits out the server's start).
  WHARF_RETURN_IF_ERROR(WaitForServer(*ep, target, options.message_bytes, clock)
                            .WithContext("wharf goodput warm-up"));
  std::deque<Completion> flight;
  GoodputResult out;
  const TimeNs start = clock.NowNs();
  const TimeNs end = start + static_cast<TimeNs>(options.seconds * kNsPerSec);
  while (true) {
    TimeNs now = clock.NowNs();
    while (now < end && static_cast<int>(flight.size()) < options.window) {
      flight.push_back(ep->ICall(target, kSink, Buffer::Allocate(options.message_bytes),
                                 {.deadline = std::chrono::seconds(10)}));
    }
    if (flight.empty()) break;
    WHARF_RETURN_IF_ERROR(flight.front().Wait().WithContext("wharf goodput"));
    flight.pop_front();
    ++out.messages;
  }
  out.seconds = static_cast<double>(clock.NowNs() - start) / kNsPerSec;
  out.bits_per_second =
      static_cast<double>(out.messages) * static_cast<double>(options.message_bytes) * 8 / out.seconds;
  (void)ep->Call(target, kStop, Buffer(), {.deadline = std::chrono::seconds(1)});
  (void)server.Wait(5 * kNsPerSec);
  return out;
}

}  // namespace wharf::tools::bench
