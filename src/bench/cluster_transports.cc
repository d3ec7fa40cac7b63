// The wharf echo server and client transport of a cluster node, and the
// choice between them and the kernel baselines (kernel_transports.h).
#include "bench/cluster_transports.h"

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "bench/kernel_transports.h"
#include "bench/sockets.h"

namespace wharf::bench {
namespace {

constexpr uint32_t kEchoMethod = 1;
bool IsWharf(const std::string& proto) { return proto == "homa" || proto == "tcp"; }

// Every host's kernel-baseline server address.
Result<std::vector<SocketAddress>> KernelServers(const NodeTransportConfig& c) {
  std::vector<SocketAddress> servers;
  for (const std::string& a : c.addresses) {
    WHARF_ASSIGN_OR_RETURN(SocketAddress s, ParseSocketAddress(a, static_cast<uint16_t>(c.port)));
    servers.push_back(s);
  }
  return servers;
}

Status UnknownProto(const std::string& proto) {
  return InvalidArgumentError("--proto " + proto + ": expected homa, tcp, kernel-udp or kernel-tcp");
}

// --- wharf ---

}  // namespace

EndpointOptions WharfEndpointOptions(const NodeTransportConfig& c, const std::string& address) {
  EndpointOptions o{.address = address};
  if (c.managed) {
    o.hosting = Hosting::kManaged;
    o.daemon_socket = c.daemon_socket;
  } else {
    o.hosting = Hosting::kEmbedded;
  }
  // Sleep when idle: two CPUs are shared by every host's node.
  if (!c.endpoint_defaults) o.settings.emplace_back("endpoint.spin", "0ns");
  if (c.link_bps > 0) o.settings.emplace_back("homa.link_rate", std::to_string(c.link_bps) + "bps");
  for (const auto& setting : c.settings) o.settings.push_back(setting);
  return o;
}

namespace {

class WharfEchoServer final : public EchoServer {
 public:
  WharfEchoServer(std::unique_ptr<Endpoint> ep, std::shared_ptr<void> serving)
      : serving_(std::move(serving)), ep_(std::move(ep)) {
    thread_ = std::thread([this] {
      while (!stop_) (void)ep_->Run(std::chrono::milliseconds(50));
    });
  }
  ~WharfEchoServer() override { Stop(); }
  // The server endpoint's nonzero packet counters ("homa.packets_sent=..."):
  // what a message cost on the wire (grants, resends) beside its bytes.
  std::string counters() const override {
    std::string out;
    for (const auto& [name, value] : ep_->Stats()) {
      if (value == 0 || !(name.starts_with("homa.") || name.starts_with("udp."))) continue;
      out += name + "=" + std::to_string(value) + " ";
    }
    return out;
  }
  void Stop() override {
    stop_ = true;
    ep_->Shutdown();
    if (thread_.joinable()) thread_.join();
  }

 private:
  std::shared_ptr<void> serving_;  // declared first: outlives ep_
  std::unique_ptr<Endpoint> ep_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class WharfLoadTransport final : public LoadTransport {
 public:
  WharfLoadTransport(std::unique_ptr<Endpoint> ep, std::vector<std::string> servers,
                     const Clock& clock, int max_outstanding)
      : ep_(std::move(ep)), servers_(std::move(servers)), clock_(clock),
        calls_(static_cast<size_t>(max_outstanding)) {}

  Status Issue(uint32_t tag, int server, uint64_t bytes) override {
    if (tag >= calls_.size() || server < 0 || server >= static_cast<int>(servers_.size())) {
      return InvalidArgumentError("tag or server out of range");
    }
    Buffer request = ep_->AllocateBuffer(bytes);
    calls_[tag] = ep_->ICall(servers_[server], kEchoMethod, std::move(request),
                             {.deadline = std::chrono::seconds(10)});
    return OkStatus();
  }

  std::string first_error() const override { return first_error_; }
  std::vector<std::pair<std::string, uint64_t>> Counters() const override { return ep_->Stats(); }
  void BeginBurst() override { ep_->BeginBatch(); }
  void EndBurst() override { ep_->EndBatch(); }

  void Wait(TimeNs deadline, CompletionSink& sink) override {
    // The endpoint's own wait: its timers are armed only while it sleeps,
    // where an epoll loop on fd() would have it arm one at every deadline
    // (each pacer slot), a syscall that costs more than a round trip here.
    if (Reap(sink) > 0) return;
    const DurationNs left = deadline - clock_.NowNs();
    if (left > 0) (void)ep_->WaitForAny(std::chrono::nanoseconds(left));
    (void)Reap(sink);
  }

 private:
  int Reap(CompletionSink& sink) {
    int done = 0;
    for (size_t i = 0; i < calls_.size(); ++i) {
      Completion& c = calls_[i];
      if (!c.valid() || !c.done()) continue;
      const bool ok = c.status().ok();
      if (!ok && first_error_.empty()) first_error_ = c.status().ToString();
      c = Completion();
      sink.Done(static_cast<uint32_t>(i), ok);
      ++done;
    }
    return done;
  }

  std::unique_ptr<Endpoint> ep_;
  std::vector<std::string> servers_;
  const Clock& clock_;
  std::vector<Completion> calls_;  // by tag
  std::string first_error_;
};

}  // namespace

std::unique_ptr<EchoServer> RunEndpointServer(std::unique_ptr<Endpoint> ep,
                                              std::shared_ptr<void> serving) {
  return std::make_unique<WharfEchoServer>(std::move(ep), std::move(serving));
}

std::string ServerAddress(const NodeTransportConfig& c, int host) {
  const std::string hp = c.addresses.at(static_cast<size_t>(host)) + ":" + std::to_string(c.port);
  if (c.proto == "homa") return "homa://" + hp + (c.managed ? "/echo" : "");
  if (c.proto == "tcp") return "tcp://" + hp;
  return hp;
}

Result<std::unique_ptr<EchoServer>> StartEchoServer(const NodeTransportConfig& c) {
  if (IsWharf(c.proto)) {
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep,
                           Endpoint::Open(WharfEndpointOptions(c, ServerAddress(c, c.host))));
    Endpoint* raw = ep.get();  // the handler runs on the server's thread, before Shutdown
    const uint64_t fixed = c.response_bytes;
    WHARF_RETURN_IF_ERROR(
        ep->Serve(kEchoMethod, [raw, fixed](const RpcContext&, Buffer request) {
          if (fixed == 0) return Result<Buffer>(std::move(request));
          return Result<Buffer>(raw->AllocateBuffer(fixed));
        }));
    return RunEndpointServer(std::move(ep));
  }
  const std::string& ip = c.addresses.at(static_cast<size_t>(c.host));
  const auto port = static_cast<uint16_t>(c.port);
  Result<std::unique_ptr<KernelEchoServer>> kernel = UnknownProto(c.proto);
  if (c.proto == "kernel-udp") {
    kernel = StartKernelUdpEchoServer(ip, port, SystemClock::Get(), c.response_bytes);
  }
  if (c.proto == "kernel-tcp") {
    kernel = StartKernelTcpEchoServer(ip, port, SystemClock::Get(), c.response_bytes);
  }
  if (!kernel.ok()) return kernel.status();
  return std::unique_ptr<EchoServer>(std::move(kernel).value());
}

Result<std::unique_ptr<LoadTransport>> OpenLoadTransport(const NodeTransportConfig& c,
                                                         const Clock& clock,
                                                         int max_outstanding) {
  const std::string& ip = c.addresses.at(static_cast<size_t>(c.host));
  if (IsWharf(c.proto)) {
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep,
                           Endpoint::Open(WharfEndpointOptions(c, c.proto + "://" + ip + ":0")));
    std::vector<std::string> servers;
    for (size_t h = 0; h < c.addresses.size(); ++h) {
      servers.push_back(ServerAddress(c, static_cast<int>(h)));
    }
    return std::unique_ptr<LoadTransport>(
        new WharfLoadTransport(std::move(ep), std::move(servers), clock, max_outstanding));
  }
  if (c.proto == "kernel-udp") {
    WHARF_ASSIGN_OR_RETURN(std::vector<SocketAddress> servers, KernelServers(c));
    return OpenKernelUdpTransport(ip, std::move(servers), clock, max_outstanding);
  }
  if (c.proto == "kernel-tcp") {
    WHARF_ASSIGN_OR_RETURN(std::vector<SocketAddress> servers, KernelServers(c));
    return OpenKernelTcpTransport(ip, std::move(servers), clock, max_outstanding);
  }
  return UnknownProto(c.proto);
}

}  // namespace wharf::bench
