// The wharf and UDP echo servers and client transports of a cluster node.
#include "tools/bench/cluster_transports.h"

#include <poll.h>
#include <sys/socket.h>

#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "tools/bench/sockets.h"

namespace wharf::tools::bench {
namespace {

constexpr uint32_t kEchoMethod = 1;
// Waits on an fd are cut to this so that a missed wake-up costs little.
constexpr DurationNs kMaxWaitSliceNs = 1 * kNsPerMs;
// The UDP request header: the tag (4 bytes, little-endian); shorter
// messages are padded to it.
constexpr size_t kUdpHeaderBytes = 4;

bool IsWharf(const std::string& proto) { return proto == "homa" || proto == "tcp"; }

// Waits up to min(deadline, slice) for `fd` to be readable.
void WaitReadable(int fd, const Clock& clock, TimeNs deadline) {
  const DurationNs left = std::min(deadline - clock.NowNs(), kMaxWaitSliceNs);
  if (left <= 0) return;
  pollfd p{fd, POLLIN, 0};
  timespec ts{static_cast<time_t>(left / kNsPerSec), static_cast<long>(left % kNsPerSec)};
  (void)::ppoll(&p, 1, &ts, nullptr);
}

// --- wharf ---

EndpointOptions WharfOptions(const NodeTransportConfig& c, const std::string& address) {
  EndpointOptions o{.address = address};
  if (c.managed) {
    o.hosting = Hosting::kManaged;
    o.daemon_socket = c.daemon_socket;
  } else {
    o.hosting = Hosting::kEmbedded;
  }
  // Sleep when idle: two CPUs are shared by every host's node.
  o.settings.emplace_back("endpoint.spin", "0ns");
  if (c.link_bps > 0) o.settings.emplace_back("homa.link_rate", std::to_string(c.link_bps) + "bps");
  return o;
}

class WharfEchoServer final : public EchoServer {
 public:
  explicit WharfEchoServer(std::unique_ptr<Endpoint> ep) : ep_(std::move(ep)) {
    thread_ = std::thread([this] {
      while (!stop_) (void)ep_->Run(std::chrono::milliseconds(50));
    });
  }
  ~WharfEchoServer() override { Stop(); }
  void Stop() override {
    stop_ = true;
    ep_->Shutdown();
    if (thread_.joinable()) thread_.join();
  }

 private:
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

// --- UDP ---

class UdpEchoServer final : public EchoServer {
 public:
  explicit UdpEchoServer(UniqueFd fd) : fd_(std::move(fd)) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~UdpEchoServer() override { Stop(); }
  void Stop() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }

 private:
  void Serve() {
    std::vector<char> buffer(65536);
    while (!stop_) {
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, 50) <= 0) continue;
      while (true) {
        sockaddr_storage from{};
        socklen_t from_len = sizeof(from);
        const ssize_t n = ::recvfrom(fd_.get(), buffer.data(), buffer.size(), MSG_DONTWAIT,
                                     reinterpret_cast<sockaddr*>(&from), &from_len);
        if (n < 0) break;
        (void)::sendto(fd_.get(), buffer.data(), static_cast<size_t>(n), 0,
                       reinterpret_cast<sockaddr*>(&from), from_len);
      }
    }
  }

  UniqueFd fd_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class UdpLoadTransport final : public LoadTransport {
 public:
  UdpLoadTransport(UniqueFd fd, std::vector<SocketAddress> servers, const Clock& clock)
      : fd_(std::move(fd)), servers_(std::move(servers)), clock_(clock), buffer_(65536, 0) {}

  Status Issue(uint32_t tag, int server, uint64_t bytes) override {
    if (bytes > kUdpMaxMessageBytes || server < 0 ||
        server >= static_cast<int>(servers_.size())) {
      return InvalidArgumentError("size or server out of range");
    }
    const size_t len = std::max<size_t>(bytes, kUdpHeaderBytes);
    std::memcpy(buffer_.data(), &tag, kUdpHeaderBytes);
    const SocketAddress& to = servers_[server];
    if (::sendto(fd_.get(), buffer_.data(), len, 0, to.get(), to.length) < 0) {
      return ErrnoToStatus(errno, "sendto " + to.ToString());
    }
    return OkStatus();
  }

  void Wait(TimeNs deadline, CompletionSink& sink) override {
    while (true) {
      int done = 0;
      while (true) {
        const ssize_t n = ::recv(fd_.get(), buffer_.data(), buffer_.size(), MSG_DONTWAIT);
        if (n < 0) break;
        if (static_cast<size_t>(n) < kUdpHeaderBytes) continue;  // not ours: ignored
        uint32_t tag = 0;
        std::memcpy(&tag, buffer_.data(), kUdpHeaderBytes);
        sink.Done(tag, true);
        ++done;
      }
      if (done > 0 || clock_.NowNs() >= deadline) return;
      WaitReadable(fd_.get(), clock_, deadline);
    }
  }

 private:
  UniqueFd fd_;
  std::vector<SocketAddress> servers_;
  const Clock& clock_;
  std::vector<char> buffer_;
};

Status SetBuffers(int fd) {
  // Room for a burst of 64 KB datagrams (the kernel caps it at rmem_max).
  const int size = 4 << 20;
  (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  return OkStatus();
}

Result<UniqueFd> BoundUdp(const std::string& ip, uint16_t port) {
  WHARF_ASSIGN_OR_RETURN(SocketAddress addr, ParseSocketAddress(ip, port));
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(addr.family(), SOCK_DGRAM));
  if (::bind(fd.get(), addr.get(), addr.length) != 0) {
    return ErrnoToStatus(errno, "bind UDP " + addr.ToString());
  }
  (void)SetBuffers(fd.get());
  return fd;
}

}  // namespace

std::string ServerAddress(const NodeTransportConfig& c, int host) {
  const std::string hp = c.addresses.at(static_cast<size_t>(host)) + ":" + std::to_string(c.port);
  if (c.proto == "homa") return "homa://" + hp + (c.managed ? "/echo" : "");
  if (c.proto == "tcp") return "tcp://" + hp;
  return hp;
}

Result<std::unique_ptr<EchoServer>> StartEchoServer(const NodeTransportConfig& c) {
  if (IsWharf(c.proto)) {
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep,
                           Endpoint::Open(WharfOptions(c, ServerAddress(c, c.host))));
    WHARF_RETURN_IF_ERROR(ep->Serve(kEchoMethod, [](const RpcContext&, Buffer request) {
      return Result<Buffer>(std::move(request));
    }));
    return std::unique_ptr<EchoServer>(new WharfEchoServer(std::move(ep)));
  }
  if (c.proto == "udp") {
    WHARF_ASSIGN_OR_RETURN(UniqueFd fd, BoundUdp(c.addresses.at(static_cast<size_t>(c.host)),
                                                 static_cast<uint16_t>(c.port)));
    return std::unique_ptr<EchoServer>(new UdpEchoServer(std::move(fd)));
  }
  return InvalidArgumentError("--proto " + c.proto + ": expected homa, tcp or udp");
}

Result<std::unique_ptr<LoadTransport>> OpenLoadTransport(const NodeTransportConfig& c,
                                                         const Clock& clock,
                                                         int max_outstanding) {
  const std::string& ip = c.addresses.at(static_cast<size_t>(c.host));
  if (IsWharf(c.proto)) {
    WHARF_ASSIGN_OR_RETURN(std::unique_ptr<Endpoint> ep,
                           Endpoint::Open(WharfOptions(c, c.proto + "://" + ip + ":0")));
    std::vector<std::string> servers;
    for (size_t h = 0; h < c.addresses.size(); ++h) {
      servers.push_back(ServerAddress(c, static_cast<int>(h)));
    }
    return std::unique_ptr<LoadTransport>(
        new WharfLoadTransport(std::move(ep), std::move(servers), clock, max_outstanding));
  }
  if (c.proto == "udp") {
    WHARF_ASSIGN_OR_RETURN(UniqueFd fd, BoundUdp(ip, 0));
    std::vector<SocketAddress> servers;
    for (const std::string& a : c.addresses) {
      WHARF_ASSIGN_OR_RETURN(SocketAddress s,
                             ParseSocketAddress(a, static_cast<uint16_t>(c.port)));
      servers.push_back(s);
    }
    return std::unique_ptr<LoadTransport>(
        new UdpLoadTransport(std::move(fd), std::move(servers), clock));
  }
  return InvalidArgumentError("--proto " + c.proto + ": expected homa, tcp or udp");
}

}  // namespace wharf::tools::bench
