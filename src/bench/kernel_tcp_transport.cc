// The kernel-tcp baseline (kernel_transports.h): a one-thread epoll echo
// server and a client LoadTransport with one non-blocking connection per
// server host, as Homa's cp_node TCP mode.
#include <netinet/in.h>
#include <poll.h>
#include <sys/epoll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>
#include <unordered_map>

#include "bench/kernel_transports.h"
#include "bench/little_endian.h"

namespace wharf::bench {
namespace {

constexpr int kServerPollMs = 50;  // how soon Stop is noticed
constexpr size_t kMaxConnections = 1024;
// A connection with nothing in flight for this long is closed (the clients
// keep theirs busy for the whole run).
constexpr DurationNs kIdleTimeoutNs = 60 * kNsPerSec;
// The server stops reading a connection whose unsent echoes exceed this,
// until they drain (TCP's back-pressure reaches the client).
constexpr size_t kMaxUnsentBytes = 4 << 20;
constexpr size_t kReadChunkBytes = 64 << 10;
constexpr size_t kFillerBytes = 64 << 10;

const char* Filler() {
  static const std::array<char, kFillerBytes> filler = [] {
    std::array<char, kFillerBytes> a{};
    a.fill('w');
    return a;
  }();
  return filler.data();
}


void EncodeHeader(uint32_t length, uint64_t rpc_id, char* out) {
  PutLe(kKernelTcpMagic, 4, out);
  PutLe(length, 4, out + 4);
  PutLe(rpc_id, 8, out + 8);
}

// A frame header read from the stream; false when it is not one of ours.
bool DecodeHeader(const char* in, uint32_t* length, uint64_t* rpc_id) {
  if (GetLe(in, 4) != kKernelTcpMagic) return false;
  *length = static_cast<uint32_t>(GetLe(in + 4, 4));
  *rpc_id = GetLe(in + 8, 8);
  return *length <= kKernelTcpMaxMessageBytes;
}

bool WouldBlock(int e) { return e == EAGAIN || e == EWOULDBLOCK; }

// --- server ---

class TcpEchoServer final : public KernelEchoServer {
 public:
  TcpEchoServer(UniqueFd listener, UniqueFd epoll, uint16_t port, const Clock& clock,
                uint64_t response_bytes)
      : listener_(std::move(listener)),
        epoll_(std::move(epoll)),
        port_(port),
        clock_(clock),
        response_bytes_(static_cast<uint32_t>(response_bytes)),
        in_(kReadChunkBytes) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~TcpEchoServer() override { Stop(); }

  void Stop() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
    conns_.clear();
  }
  uint16_t port() const override { return port_; }
  // After Stop.
  std::string counters() const override {
    return "accepted=" + std::to_string(accepted_) + " refused=" + std::to_string(refused_) +
           " messages=" + std::to_string(messages_) + " malformed=" + std::to_string(malformed_) +
           " idle_closed=" + std::to_string(idle_closed_);
  }

 private:
  // One client connection. The echo of a frame is appended to `out` as its
  // bytes arrive (header first), and sent only up to `ready`, the end of
  // the last complete frame: each message goes back whole. With a fixed
  // response size the request's body is skipped and its answer appended
  // when the frame is complete.
  struct Conn {
    UniqueFd fd;
    char header[kKernelTcpHeaderBytes];
    size_t header_got = 0;
    uint64_t rpc_id = 0;  // of the frame being read
    uint64_t body_left = 0;
    bool in_body = false;
    std::vector<char> out;
    size_t sent = 0;   // of out
    size_t ready = 0;  // out[sent, ready) may be sent
    uint32_t events = 0;
    TimeNs last_ns = 0;
  };

  void Serve() {
    std::array<epoll_event, 64> events;
    TimeNs next_sweep = clock_.NowNs() + kNsPerSec;
    while (!stop_) {
      const int n = ::epoll_wait(epoll_.get(), events.data(), events.size(), kServerPollMs);
      for (int i = 0; i < n; ++i) {
        const int fd = events[i].data.fd;
        if (fd == listener_.get()) {
          Accept();
          continue;
        }
        auto it = conns_.find(fd);
        if (it == conns_.end()) continue;
        Conn& c = *it->second;
        c.last_ns = clock_.NowNs();
        bool ok = true;
        if (events[i].events & (EPOLLIN | EPOLLERR | EPOLLHUP)) ok = OnReadable(c);
        if (ok && (events[i].events & EPOLLOUT)) ok = Flush(c);
        if (!ok) conns_.erase(it);
      }
      if (clock_.NowNs() >= next_sweep) {
        next_sweep = clock_.NowNs() + kNsPerSec;
        SweepIdle();
      }
    }
  }

  void Accept() {
    while (true) {
      const int fd = ::accept4(listener_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
      if (fd < 0) return;
      UniqueFd owned(fd);
      if (conns_.size() >= kMaxConnections) {
        ++refused_;
        continue;  // closed
      }
      (void)SetTcpNoDelay(fd);
      auto c = std::make_unique<Conn>();
      c->fd = std::move(owned);
      c->last_ns = clock_.NowNs();
      if (!SetEvents(*c, EPOLLIN, EPOLL_CTL_ADD)) continue;
      ++accepted_;
      conns_.emplace(fd, std::move(c));
    }
  }

  bool SetEvents(Conn& c, uint32_t events, int op) {
    if (op == EPOLL_CTL_MOD && events == c.events) return true;
    epoll_event ev{};
    ev.events = events;
    ev.data.fd = c.fd.get();
    if (::epoll_ctl(epoll_.get(), op, c.fd.get(), &ev) != 0) return false;
    c.events = events;
    return true;
  }

  // Reads what is there; false to close the connection.
  bool OnReadable(Conn& c) {
    while (WantsInput(c)) {
      const ssize_t n = ::recv(c.fd.get(), in_.data(), in_.size(), MSG_DONTWAIT);
      if (n == 0) return false;  // the client closed
      if (n < 0) return WouldBlock(errno) ? Flush(c) : false;
      if (!Parse(c, in_.data(), static_cast<size_t>(n))) {
        ++malformed_;
        return false;
      }
    }
    // Too much unsent: stop reading until Flush drains it.
    return Flush(c);
  }

  // Reading pauses while complete echoes wait to be sent (never in the
  // middle of a frame: it must arrive whole to be echoed).
  static bool WantsInput(const Conn& c) { return c.ready - c.sent < kMaxUnsentBytes; }

  bool Parse(Conn& c, const char* p, size_t n) {
    while (n > 0) {
      if (!c.in_body) {
        const size_t take = std::min(n, kKernelTcpHeaderBytes - c.header_got);
        std::memcpy(c.header + c.header_got, p, take);
        c.header_got += take;
        p += take;
        n -= take;
        if (c.header_got < kKernelTcpHeaderBytes) return true;
        uint32_t length = 0;
        uint64_t rpc_id = 0;
        if (!DecodeHeader(c.header, &length, &rpc_id)) return false;
        if (response_bytes_ == 0) c.out.insert(c.out.end(), c.header, c.header + kKernelTcpHeaderBytes);
        c.header_got = 0;
        c.rpc_id = rpc_id;
        c.body_left = length;
        c.in_body = true;
      }
      const size_t take = static_cast<size_t>(std::min<uint64_t>(n, c.body_left));
      if (response_bytes_ == 0) c.out.insert(c.out.end(), p, p + take);
      p += take;
      n -= take;
      c.body_left -= take;
      if (c.body_left == 0) {
        c.in_body = false;
        if (response_bytes_ > 0) AppendFixedResponse(c);
        c.ready = c.out.size();
        ++messages_;
      }
    }
    return true;
  }

  // Appends a frame of response_bytes_ filler bytes answering c.rpc_id.
  void AppendFixedResponse(Conn& c) {
    char header[kKernelTcpHeaderBytes];
    EncodeHeader(response_bytes_, c.rpc_id, header);
    c.out.insert(c.out.end(), header, header + kKernelTcpHeaderBytes);
    for (uint64_t left = response_bytes_; left > 0;) {
      const size_t chunk = static_cast<size_t>(std::min<uint64_t>(left, kFillerBytes));
      c.out.insert(c.out.end(), Filler(), Filler() + chunk);
      left -= chunk;
    }
  }

  // Sends the complete echoes; false to close the connection.
  bool Flush(Conn& c) {
    while (c.sent < c.ready) {
      const ssize_t n =
          ::send(c.fd.get(), c.out.data() + c.sent, c.ready - c.sent, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) {
        if (!WouldBlock(errno)) return false;
        break;
      }
      c.sent += static_cast<size_t>(n);
    }
    if (c.sent > 0 && (c.sent == c.out.size() || c.sent >= c.out.size() / 2)) {
      // Drop what was sent (a partial frame being read stays).
      c.out.erase(c.out.begin(), c.out.begin() + static_cast<std::ptrdiff_t>(c.sent));
      c.ready -= c.sent;
      c.sent = 0;
    }
    const bool unsent = c.sent < c.ready;
    return SetEvents(c, (unsent ? EPOLLOUT : 0u) | (WantsInput(c) ? EPOLLIN : 0u), EPOLL_CTL_MOD);
  }

  void SweepIdle() {
    const TimeNs now = clock_.NowNs();
    for (auto it = conns_.begin(); it != conns_.end();) {
      const Conn& c = *it->second;
      if (c.out.empty() && !c.in_body && c.header_got == 0 && now - c.last_ns >= kIdleTimeoutNs) {
        ++idle_closed_;
        it = conns_.erase(it);
      } else {
        ++it;
      }
    }
  }

  UniqueFd listener_;
  UniqueFd epoll_;
  uint16_t port_;
  const Clock& clock_;
  const uint32_t response_bytes_;  // 0: echo
  std::vector<char> in_;  // the server thread's read buffer
  // Server thread only (read by counters() after Stop).
  std::unordered_map<int, std::unique_ptr<Conn>> conns_;  // by fd, at most kMaxConnections
  uint64_t accepted_ = 0, refused_ = 0, messages_ = 0, malformed_ = 0, idle_closed_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

// --- client ---

class TcpLoadTransport final : public LoadTransport {
 public:
  TcpLoadTransport(std::string local_ip, std::vector<SocketAddress> servers, const Clock& clock,
                   int max_outstanding)
      : local_ip_(std::move(local_ip)),
        servers_(std::move(servers)),
        clock_(clock),
        rpc_ids_(static_cast<size_t>(max_outstanding), 0),
        server_of_(static_cast<size_t>(max_outstanding), -1),
        conns_(servers_.size()),
        in_(kReadChunkBytes) {
    for (Conn& c : conns_) c.frames.resize(2 * static_cast<size_t>(max_outstanding));
    pollfds_.reserve(conns_.size());
    poll_servers_.reserve(conns_.size());
    broken_.reserve(conns_.size());
  }

  Status Issue(uint32_t tag, int server, uint64_t bytes) override {
    if (tag >= rpc_ids_.size() || server < 0 || server >= static_cast<int>(servers_.size()) ||
        bytes > kKernelTcpMaxMessageBytes) {
      return InvalidArgumentError("kernel-tcp: tag, server or size out of range");
    }
    Conn& c = conns_[server];
    if (c.count == c.frames.size()) return ResourceExhaustedError("kernel-tcp: send queue full");
    if (!c.fd.valid()) {
      if (Status s = Connect(server); !s.ok()) {
        if (first_error_.empty()) first_error_ = s.ToString();
        return s;
      }
    }
    const uint64_t rpc_id = (++sequence_ << 32) | tag;
    rpc_ids_[tag] = rpc_id;
    server_of_[tag] = server;
    c.frames[(c.head + c.count) % c.frames.size()] = {.rpc_id = rpc_id,
                                                      .length = static_cast<uint32_t>(bytes)};
    ++c.count;
    if (!Flush(c)) MarkBroken(server, "send");
    return OkStatus();
  }

  void Wait(TimeNs deadline, CompletionSink& sink) override {
    while (true) {
      int done = 0;
      for (const auto& [server, what] : broken_) done += Close(server, what, sink);
      broken_.clear();
      pollfds_.clear();
      poll_servers_.clear();
      for (size_t s = 0; s < conns_.size(); ++s) {
        Conn& c = conns_[s];
        if (!c.fd.valid()) continue;
        if (!c.connecting && !Flush(c)) {
          done += Close(static_cast<int>(s), "send", sink);
          continue;
        }
        const short events = POLLIN | (c.connecting || c.count > 0 ? POLLOUT : 0);
        pollfds_.push_back({c.fd.get(), events, 0});
        poll_servers_.push_back(static_cast<int>(s));
      }
      const DurationNs left = done > 0 ? 0 : std::max<DurationNs>(0, deadline - clock_.NowNs());
      timespec ts{static_cast<time_t>(left / kNsPerSec), static_cast<long>(left % kNsPerSec)};
      const int ready = pollfds_.empty() && left == 0
                            ? 0
                            : ::ppoll(pollfds_.data(), pollfds_.size(), &ts, nullptr);
      for (size_t i = 0; ready > 0 && i < pollfds_.size(); ++i) {
        done += Handle(poll_servers_[i], pollfds_[i].revents, sink);
      }
      if (done > 0 || clock_.NowNs() >= deadline) return;
    }
  }

  std::string first_error() const override { return first_error_; }

 private:
  struct Frame {
    uint64_t rpc_id = 0;
    uint32_t length = 0;
    uint64_t sent = 0;  // header and payload bytes handed to the kernel
  };
  struct Conn {
    UniqueFd fd;
    bool connecting = false;
    std::vector<Frame> frames;  // a ring: requests not fully sent yet
    size_t head = 0;
    size_t count = 0;
    char out_header[kKernelTcpHeaderBytes];
    char in_header[kKernelTcpHeaderBytes];  // the response being read
    size_t in_header_got = 0;
    uint64_t in_body_left = 0;
    uint64_t in_rpc_id = 0;
    bool in_body = false;
  };

  Status Connect(int server) {
    const SocketAddress& to = servers_[server];
    WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(to.family(), SOCK_STREAM | SOCK_NONBLOCK));
    WHARF_ASSIGN_OR_RETURN(SocketAddress local, ParseSocketAddress(local_ip_, 0));
    if (::bind(fd.get(), local.get(), local.length) != 0) {
      return ErrnoToStatus(errno, "kernel-tcp bind " + local.ToString());
    }
    (void)SetTcpNoDelay(fd.get());
    Conn& c = conns_[server];
    if (::connect(fd.get(), to.get(), to.length) != 0) {
      if (errno != EINPROGRESS) return ErrnoToStatus(errno, "kernel-tcp connect " + to.ToString());
      c.connecting = true;
    }
    c.fd = std::move(fd);
    return OkStatus();
  }

  // Writes queued frames until the socket is full; false on an error.
  bool Flush(Conn& c) {
    while (!c.connecting && c.count > 0) {
      Frame& f = c.frames[c.head];
      const auto tag = static_cast<uint32_t>(f.rpc_id & 0xffff'ffff);
      if (f.sent == 0 && rpc_ids_[tag] != f.rpc_id) {  // abandoned before a byte left
        Pop(c);
        continue;
      }
      iovec iov[2];
      int parts = 0;
      uint64_t payload_sent = 0;
      if (f.sent < kKernelTcpHeaderBytes) {
        if (f.sent == 0) EncodeHeader(f.length, f.rpc_id, c.out_header);
        iov[parts++] = {c.out_header + f.sent, kKernelTcpHeaderBytes - f.sent};
      } else {
        payload_sent = f.sent - kKernelTcpHeaderBytes;
      }
      const uint64_t payload_left = f.length - payload_sent;
      if (payload_left > 0) {
        iov[parts++] = {const_cast<char*>(Filler()),
                        static_cast<size_t>(std::min<uint64_t>(payload_left, kFillerBytes))};
      }
      msghdr msg{};
      msg.msg_iov = iov;
      msg.msg_iovlen = static_cast<size_t>(parts);
      const ssize_t n = ::sendmsg(c.fd.get(), &msg, MSG_DONTWAIT | MSG_NOSIGNAL);
      if (n < 0) return WouldBlock(errno);
      f.sent += static_cast<uint64_t>(n);
      if (f.sent == kKernelTcpHeaderBytes + f.length) Pop(c);
    }
    return true;
  }

  void Pop(Conn& c) {
    c.head = (c.head + 1) % c.frames.size();
    --c.count;
  }

  // Acts on poll's revents for a connection; returns RPCs finished.
  int Handle(int server, short revents, CompletionSink& sink) {
    Conn& c = conns_[server];
    if (revents == 0) return 0;
    if (c.connecting) {
      int err = 0;
      socklen_t len = sizeof(err);
      (void)::getsockopt(c.fd.get(), SOL_SOCKET, SO_ERROR, &err, &len);
      if (err != 0) return Close(server, std::string("connect: ") + std::strerror(err), sink);
      if (!(revents & (POLLOUT | POLLIN))) return 0;
      c.connecting = false;
    }
    int done = 0;
    if (revents & (POLLIN | POLLERR | POLLHUP)) {
      std::string what;
      done += Read(c, sink, &what);
      if (!what.empty()) return done + Close(server, what, sink);
    }
    if ((revents & POLLOUT) && !Flush(c)) done += Close(server, "send", sink);
    return done;
  }

  // Reads responses until the socket is empty; sets *what on a failure.
  int Read(Conn& c, CompletionSink& sink, std::string* what) {
    int done = 0;
    while (true) {
      const ssize_t n = ::recv(c.fd.get(), in_.data(), in_.size(), MSG_DONTWAIT);
      if (n == 0) {
        *what = "closed by the server";
        return done;
      }
      if (n < 0) {
        if (!WouldBlock(errno)) *what = std::string("recv: ") + std::strerror(errno);
        return done;
      }
      const char* p = in_.data();
      size_t left = static_cast<size_t>(n);
      while (left > 0) {
        if (!c.in_body) {
          const size_t take = std::min(left, kKernelTcpHeaderBytes - c.in_header_got);
          std::memcpy(c.in_header + c.in_header_got, p, take);
          c.in_header_got += take;
          p += take;
          left -= take;
          if (c.in_header_got < kKernelTcpHeaderBytes) break;
          uint32_t length = 0;
          if (!DecodeHeader(c.in_header, &length, &c.in_rpc_id)) {
            *what = "malformed response header";
            return done;
          }
          c.in_header_got = 0;
          c.in_body_left = length;
          c.in_body = true;
        }
        const uint64_t take = std::min<uint64_t>(left, c.in_body_left);
        p += take;
        left -= take;
        c.in_body_left -= take;
        if (c.in_body_left > 0) continue;
        c.in_body = false;
        const auto tag = static_cast<uint32_t>(c.in_rpc_id & 0xffff'ffff);
        // A stale answer (its RPC was abandoned, the tag reused) is ignored.
        if (tag < rpc_ids_.size() && rpc_ids_[tag] == c.in_rpc_id) {
          rpc_ids_[tag] = 0;
          sink.Done(tag, true);
          ++done;
        }
      }
    }
  }

  void MarkBroken(int server, std::string what) {
    for (const auto& b : broken_) {
      if (b.first == server) return;
    }
    broken_.emplace_back(server, std::move(what));
  }

  // Closes the connection to `server` and fails its RPCs in flight; the
  // next RPC to it reconnects. Returns the RPCs failed.
  int Close(int server, const std::string& what, CompletionSink& sink) {
    Conn& c = conns_[server];
    if (first_error_.empty()) {
      first_error_ = "kernel-tcp: connection to " + servers_[server].ToString() + ": " + what;
    }
    c = Conn{.frames = std::move(c.frames)};
    int failed = 0;
    for (size_t tag = 0; tag < rpc_ids_.size(); ++tag) {
      if (rpc_ids_[tag] == 0 || server_of_[tag] != server) continue;
      rpc_ids_[tag] = 0;
      sink.Done(static_cast<uint32_t>(tag), false);
      ++failed;
    }
    return failed;
  }

  std::string local_ip_;
  std::vector<SocketAddress> servers_;
  const Clock& clock_;
  std::vector<uint64_t> rpc_ids_;  // by tag: the RPC in flight, 0 if none
  std::vector<int> server_of_;     // by tag: its server
  uint64_t sequence_ = 0;
  std::vector<Conn> conns_;  // by server host
  std::vector<char> in_;     // read buffer
  std::vector<pollfd> pollfds_;
  std::vector<int> poll_servers_;
  std::vector<std::pair<int, std::string>> broken_;  // failed in Issue, closed at Wait
  std::string first_error_;
};

}  // namespace

Result<std::unique_ptr<KernelEchoServer>> StartKernelTcpEchoServer(const std::string& ip,
                                                                   uint16_t port,
                                                                   const Clock& clock,
                                                                   uint64_t response_bytes) {
  if (response_bytes > kKernelTcpMaxMessageBytes) {
    return InvalidArgumentError("kernel-tcp: response size " + std::to_string(response_bytes) +
                                " is over " + std::to_string(kKernelTcpMaxMessageBytes) + " B");
  }
  WHARF_ASSIGN_OR_RETURN(SocketAddress addr, ParseSocketAddress(ip, port));
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(addr.family(), SOCK_STREAM | SOCK_NONBLOCK));
  const int one = 1;
  (void)::setsockopt(fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  if (::bind(fd.get(), addr.get(), addr.length) != 0) {
    return ErrnoToStatus(errno, "bind TCP " + addr.ToString());
  }
  if (::listen(fd.get(), 128) != 0) return ErrnoToStatus(errno, "listen " + addr.ToString());
  WHARF_ASSIGN_OR_RETURN(uint16_t bound, LocalPort(fd.get()));
  UniqueFd ep(::epoll_create1(EPOLL_CLOEXEC));
  if (!ep.valid()) return ErrnoToStatus(errno, "epoll_create1");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.fd = fd.get();
  if (::epoll_ctl(ep.get(), EPOLL_CTL_ADD, fd.get(), &ev) != 0) {
    return ErrnoToStatus(errno, "epoll_ctl");
  }
  return std::unique_ptr<KernelEchoServer>(
      new TcpEchoServer(std::move(fd), std::move(ep), bound, clock, response_bytes));
}

Result<std::unique_ptr<LoadTransport>> OpenKernelTcpTransport(const std::string& local_ip,
                                                              std::vector<SocketAddress> servers,
                                                              const Clock& clock,
                                                              int max_outstanding) {
  if (max_outstanding < 1) return InvalidArgumentError("kernel-tcp: max_outstanding < 1");
  return std::unique_ptr<LoadTransport>(
      new TcpLoadTransport(local_ip, std::move(servers), clock, max_outstanding));
}

}  // namespace wharf::bench
