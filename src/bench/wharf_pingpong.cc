// wharf ping-pong and goodput through the public API.
#include "bench/wharf_pingpong.h"

#include <fcntl.h>
#include <poll.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <functional>
#include <memory>
#include <thread>

#include "bench/child_process.h"
#include "bench/cpu_usage.h"
#include "bench/sockets.h"
#include "wharf/remote_memory.h"

namespace wharf::bench {
namespace {

constexpr uint32_t kEcho = 1;
constexpr uint32_t kStop = 3;
constexpr uint32_t kSink = 4;  // takes a request, answers empty (goodput)
constexpr int kServerOpenFailed = 4;

EndpointOptions WithSpin(EndpointOptions o, bool spin, bool yield = false) {
  o.settings.emplace_back("endpoint.spin", spin ? "1s" : "0ns");
  if (spin && yield) o.settings.emplace_back("endpoint.spin_yield", "true");
  return o;
}

// Writes all of `text` to `fd` (the forked server's report to its parent).
void WriteAll(int fd, const std::string& text) {
  size_t done = 0;
  while (done < text.size()) {
    ssize_t n = ::write(fd, text.data() + done, text.size() - done);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return;
    done += static_cast<size_t>(n);
  }
}

// The forked echo server. It opens its endpoint, reports the address it got
// (or "!" and the error) on `report_fd`, and serves until told to stop or
// `deadline_ns`.
int ServeWharf(const EndpointOptions& options, int report_fd, const Clock& clock,
               TimeNs deadline_ns) {
  auto ep = Endpoint::Open(options);
  if (!ep.ok()) {
    WriteAll(report_fd, "!" + ep.status().ToString() + "\n");
    return kServerOpenFailed;
  }
  std::atomic<bool> stop{false};
  (void)(*ep)->Serve(kEcho, [](const RpcContext&, Buffer b) { return Result<Buffer>(std::move(b)); });
  (void)(*ep)->Serve(kSink, [](const RpcContext&, Buffer) { return Result<Buffer>(Buffer()); });
  (void)(*ep)->Serve(kStop, [&stop](const RpcContext&, Buffer) {
    stop = true;
    return Result<Buffer>(Buffer());
  });
  WriteAll(report_fd, (*ep)->address() + "\n");
  ::close(report_fd);
  while (!stop && clock.NowNs() < deadline_ns) (void)(*ep)->Run(std::chrono::milliseconds(10));
  (void)(*ep)->Run(std::chrono::milliseconds(20));  // let the stop reply go and be acked
  return 0;
}

// Reads the server's one-line report: its address, or why it failed.
Result<std::string> ReadServerAddress(int fd, ChildProcess& server) {
  std::string line;
  char c;
  while (line.empty() || line.back() != '\n') {
    pollfd p{fd, POLLIN, 0};
    int r = ::poll(&p, 1, 10'000);
    if (r < 0 && errno == EINTR) continue;
    if (r == 0) return DeadlineExceededError("the echo server did not report its address in 10 s");
    ssize_t n = ::read(fd, &c, 1);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      auto exit = server.Wait(2 * kNsPerSec);
      return UnavailableError("the echo server ended before opening its endpoint (" +
                              (exit.ok() ? exit->ToString() : std::string("still running")) + ")" +
                              (exit.ok() && exit->code == kChildPinFailedExitCode && !exit->signaled
                                   ? ": could not pin it to its CPU"
                                   : ""));
    }
    line += c;
  }
  line.pop_back();
  if (!line.empty() && line.front() == '!') {
    return UnavailableError("the echo server could not open its endpoint: " + line.substr(1));
  }
  return line;
}

// The port in "homa://127.0.0.1:4000/7" (0 if there is none).
uint16_t PortOf(const std::string& address) {
  size_t start = address.find("://");
  start = start == std::string::npos ? 0 : start + 3;
  size_t end = address.find('/', start);
  std::string host_port = address.substr(start, end == std::string::npos ? end : end - start);
  size_t colon = host_port.rfind(':');
  if (colon == std::string::npos) return 0;
  return static_cast<uint16_t>(std::strtoul(host_port.c_str() + colon + 1, nullptr, 10));
}

class WharfClient final : public PingPongClient {
 public:
  WharfClient(std::unique_ptr<Endpoint> ep, std::string target, size_t size, const Clock& clock)
      : ep_(std::move(ep)), target_(std::move(target)), size_(size), clock_(clock) {}

  Result<Outcome> RoundTrip(uint64_t seq, TimeNs deadline_ns) override {
    // In managed mode this buffer is in the shared heap: sent without a copy.
    Buffer request = ep_->AllocateBuffer(size_);
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

// The first calls may still meet a server that is settling (a managed
// endpoint's first route through wharfd). Calls until the server answers,
// for up to 10 s.
Status WaitForServer(Endpoint& ep, const std::string& target, size_t bytes, const Clock& clock) {
  const TimeNs give_up_ns = clock.NowNs() + 10 * kNsPerSec;
  while (true) {
    auto r = ep.Call(target, kSink, ep.AllocateBuffer(bytes), {.deadline = std::chrono::seconds(2)});
    if (r.ok()) return OkStatus();
    if (clock.NowNs() > give_up_ns) return r.status().WithContext("waiting for the server " + target);
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
}

// Keeps `options.window` operations that `issue` starts in flight for
// `options.seconds`, then waits for the last; each of message_bytes.
// Fills `out`'s messages, seconds and bits per second.
Status KeepInFlight(const GoodputOptions& options, const Clock& clock, std::string_view what,
                    GoodputResult* out, const std::function<Completion()>& issue) {
  std::deque<Completion> flight;
  const TimeNs start = clock.NowNs();
  const TimeNs end = start + static_cast<TimeNs>(options.seconds * kNsPerSec);
  while (true) {
    const TimeNs now = clock.NowNs();
    while (now < end && static_cast<int>(flight.size()) < options.window) {
      flight.push_back(issue());
    }
    if (flight.empty()) break;
    WHARF_RETURN_IF_ERROR(flight.front().Wait().WithContext(std::string(what)));
    flight.pop_front();
    ++out->messages;
  }
  out->seconds = static_cast<double>(clock.NowNs() - start) / kNsPerSec;
  out->bits_per_second = static_cast<double>(out->messages) *
                         static_cast<double>(options.message_bytes) * 8 / out->seconds;
  return OkStatus();
}

// A forked echo server on `sides.server`, and its reported address.
struct StartedServer {
  ChildProcess process;
  std::string address;
};

Result<StartedServer> StartServer(const WharfSides& sides, TimeNs deadline_ns,
                                  const Clock& clock) {
  int report[2];
  if (::pipe2(report, O_CLOEXEC) != 0) return ErrnoToStatus(errno, "pipe2");
  UniqueFd read_end(report[0]);
  UniqueFd write_end(report[1]);
  const EndpointOptions server_options = WithSpin(sides.server, sides.server_spin, sides.server_spin_yield);
  const int cpu = sides.pinning.pin ? sides.pinning.server_cpu : -1;
  WHARF_ASSIGN_OR_RETURN(ChildProcess server, ChildProcess::Fork(cpu, [&]() {
                           read_end.Reset();
                           return ServeWharf(server_options, write_end.get(), clock, deadline_ns);
                         }));
  write_end.Reset();  // so that the read sees EOF if the server dies
  WHARF_ASSIGN_OR_RETURN(std::string address, ReadServerAddress(read_end.get(), server));
  return StartedServer{std::move(server), std::move(address)};
}

WharfSides EmbeddedSides(const std::string& scheme, const std::string& address, uint16_t port,
                         bool spin, bool pin, int client_cpu, int server_cpu) {
  WharfSides sides;
  sides.server = {.address = WharfUri(scheme, address, port), .hosting = Hosting::kEmbedded};
  sides.client = {.address = WharfUri(scheme, address, 0), .hosting = Hosting::kEmbedded};
  sides.server_spin = spin;
  sides.client_spin = spin;
  sides.pinning = PlanPinning(pin, client_cpu, server_cpu);
  return sides;
}

}  // namespace

std::string WharfUri(const std::string& scheme, const std::string& address, uint16_t port) {
  bool v6 = address.find(':') != std::string::npos;
  return scheme + "://" + (v6 ? "[" + address + "]" : address) + ":" + std::to_string(port);
}

Result<PingPongResult> RunWharfPingPongOn(const PingPongOptions& options, const WharfSides& sides,
                                          const Clock& clock, const ProgressFn& progress,
                                          std::string_view what) {
  WHARF_RETURN_IF_ERROR(ValidatePingPongOptions(options, 64u << 20));
  const std::string prefix = std::string(what) + ": ";
  auto server = StartServer(sides, ServerDeadline(options, clock), clock);
  if (!server.ok()) return server.status().WithContext(prefix);
  auto ep = Endpoint::Open(WithSpin(sides.client, sides.client_spin, sides.client_spin_yield));
  if (!ep.ok()) return ep.status().WithContext(prefix + "client endpoint");
  WHARF_RETURN_IF_ERROR(WaitForServer(**ep, server->address, options.size_bytes, clock));
  WharfClient client(std::move(*ep), server->address, options.size_bytes, clock);
  WHARF_ASSIGN_OR_RETURN(PingPongResult result,
                         RunPingPongLoop(options, sides.pinning, clock, progress, what,
                                         server->process, client, sides.other_pids));
  result.port = PortOf(server->address);
  result.hosting_note = sides.hosting_note;
  return result;
}

Result<PingPongResult> RunWharfPingPong(const PingPongOptions& options, const std::string& scheme,
                                        const Clock& clock, const ProgressFn& progress) {
  const WharfSides sides =
      EmbeddedSides(scheme, options.address, options.port, options.mode == WaitMode::kBusyPoll,
                    options.pin, options.client_cpu, options.server_cpu);
  const std::string what = "wharf " + scheme + " " + std::string(WaitModeName(options.mode)) +
                           " " + std::to_string(options.size_bytes) + " B";
  return RunWharfPingPongOn(options, sides, clock, progress, what);
}

Result<GoodputResult> RunWharfGoodputOn(const GoodputOptions& options, const WharfSides& sides,
                                        const Clock& clock) {
  const TimeNs server_deadline_ns =
      clock.NowNs() + static_cast<TimeNs>((options.seconds + 10) * kNsPerSec);
  WHARF_ASSIGN_OR_RETURN(StartedServer server, StartServer(sides, server_deadline_ns, clock));
  const std::string& target = server.address;
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep,
                         Endpoint::Open(WithSpin(sides.client, sides.client_spin, sides.client_spin_yield)));
  WHARF_ASSIGN_OR_RETURN(ScopedCpuPin pin_client,
                         ScopedCpuPin::Pin(sides.pinning.pin ? sides.pinning.client_cpu : -1));
  // Warm up: one message end to end (also waits out the server's start).
  WHARF_RETURN_IF_ERROR(WaitForServer(*ep, target, options.message_bytes, clock)
                            .WithContext("wharf goodput warm-up"));
  std::vector<pid_t> cpu_pids = {0, server.process.pid()};
  cpu_pids.insert(cpu_pids.end(), sides.other_pids.begin(), sides.other_pids.end());
  CpuMeter cpu(cpu_pids);
  GoodputResult out;
  cpu.Start();
  WHARF_RETURN_IF_ERROR(KeepInFlight(options, clock, "wharf goodput", &out, [&] {
    // Managed: the request is written straight into the shared heap.
    return ep->ICall(target, kSink, ep->AllocateBuffer(options.message_bytes),
                     {.deadline = std::chrono::seconds(10)});
  }));
  out.cpu_ns = cpu.Stop();
  out.cpu_processes = static_cast<int>(cpu_pids.size());
  out.hosting_note = sides.hosting_note;
  (void)ep->Call(target, kStop, Buffer(), {.deadline = std::chrono::seconds(1)});
  (void)server.process.Wait(5 * kNsPerSec);
  return out;
}

Result<GoodputResult> RunWharfGoodput(const GoodputOptions& options, const Clock& clock) {
  const WharfSides sides = EmbeddedSides(options.scheme, options.address, 0, /*spin=*/true,
                                         options.pin, options.client_cpu, options.server_cpu);
  return RunWharfGoodputOn(options, sides, clock);
}

Result<GoodputResult> RunWharfPutGoodput(const GoodputOptions& options, const Clock& clock) {
  WharfSides sides = EmbeddedSides("ucx", options.address, 0, /*spin=*/true, options.pin,
                                   options.client_cpu, options.server_cpu);
  sides.server.settings.emplace_back("ucx.pool_bytes",
                                     std::to_string(8 * options.message_bytes + (1 << 20)));
  return RunWharfPutGoodputOn(options, sides, clock);
}

Result<GoodputResult> RunWharfPutGoodputOn(const GoodputOptions& options, const WharfSides& sides,
                                           const Clock& clock) {
  if (options.scheme != "ucx") return InvalidArgumentError("put goodput: ucx:// only");
  // Up to 8 slots: a managed server's regions live in its heap's receive
  // area, of which they may take half (16 MiB by default).
  const uint64_t slots = std::min<uint64_t>(static_cast<uint64_t>(options.window), 8);
  const uint64_t region_bytes = options.message_bytes * slots;
  const TimeNs server_deadline_ns =
      clock.NowNs() + static_cast<TimeNs>((options.seconds + 10) * kNsPerSec);
  WHARF_ASSIGN_OR_RETURN(StartedServer server, StartServer(sides, server_deadline_ns, clock));
  const std::string& target = server.address;
  WHARF_ASSIGN_OR_RETURN(
      std::unique_ptr<Endpoint> ep,
      Endpoint::Open(WithSpin(sides.client, sides.client_spin, sides.client_spin_yield)));
  WHARF_ASSIGN_OR_RETURN(ScopedCpuPin pin_client,
                         ScopedCpuPin::Pin(sides.pinning.pin ? sides.pinning.client_cpu : -1));
  WHARF_RETURN_IF_ERROR(WaitForServer(*ep, target, 64, clock).WithContext("put goodput warm-up"));
  RemoteMemory memory(*ep);
  WHARF_ASSIGN_OR_RETURN(RemoteRegion region, memory.Ask(target, {.size = region_bytes}));
  // One write to each slot first: the region's pages are touched and UCX's
  // path is set up before the clock starts.
  for (uint64_t i = 0; i < slots; ++i) {
    WHARF_RETURN_IF_ERROR(memory.Write(region, i * options.message_bytes,
                                       ep->AllocateBuffer(options.message_bytes))
                              .WithContext("put goodput warm-up"));
  }
  std::vector<pid_t> cpu_pids = {0, server.process.pid()};
  cpu_pids.insert(cpu_pids.end(), sides.other_pids.begin(), sides.other_pids.end());
  CpuMeter cpu(cpu_pids);
  GoodputResult out;
  uint64_t issued = 0;
  cpu.Start();
  WHARF_RETURN_IF_ERROR(KeepInFlight(options, clock, "put goodput", &out, [&] {
    const uint64_t slot = issued++ % slots;
    return memory.IWrite(region, slot * options.message_bytes,
                         ep->AllocateBuffer(options.message_bytes));
  }));
  out.cpu_ns = cpu.Stop();
  out.cpu_processes = static_cast<int>(cpu_pids.size());
  out.hosting_note = sides.hosting_note;
  (void)memory.Release(region);
  (void)ep->Call(target, kStop, Buffer(), {.deadline = std::chrono::seconds(1)});
  (void)server.process.Wait(5 * kNsPerSec);
  return out;
}

}  // namespace wharf::bench
