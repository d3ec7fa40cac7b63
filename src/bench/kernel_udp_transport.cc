// The kernel-udp baseline (kernel_transports.h): an echo server thread and a
// client LoadTransport, both cutting messages into MTU-sized datagrams and
// reassembling with UdpReassembler. No retransmission, by design: this is
// what raw UDP gives an application.
#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <thread>

#include "bench/kernel_transports.h"
#include "bench/kernel_udp_reassembly.h"

namespace wharf::bench {
namespace {

constexpr int kBatch = 64;  // datagrams per recvmmsg / sendmmsg
// Receive buffers are larger than any datagram we send, so an oversize one
// arrives whole enough to be seen as malformed rather than silently cut.
constexpr size_t kReceiveBufferBytes = 2048;
constexpr int kServerPollMs = 50;  // how soon Stop is noticed

// Bytes a client sends: the content is never looked at, only echoed.
const char* Filler() {
  static const std::array<char, kKernelUdpMaxPayloadBytes> filler = [] {
    std::array<char, kKernelUdpMaxPayloadBytes> a{};
    a.fill('w');
    return a;
  }();
  return filler.data();
}

void SetBuffers(int fd) {
  // Room for a burst of datagrams: a 1 MB message is ~720 of them, ~1.7 MB
  // of kernel memory. The FORCE variants (root, as the cluster runs) pass
  // [rw]mem_max; without the privilege the kernel caps the plain ones.
  const int size = 8 << 20;
  if (::setsockopt(fd, SOL_SOCKET, SO_RCVBUFFORCE, &size, sizeof(size)) != 0) {
    (void)::setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &size, sizeof(size));
  }
  if (::setsockopt(fd, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)) != 0) {
    (void)::setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
  }
}

Result<UniqueFd> BoundUdp(const std::string& ip, uint16_t port) {
  WHARF_ASSIGN_OR_RETURN(SocketAddress addr, ParseSocketAddress(ip, port));
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(addr.family(), SOCK_DGRAM));
  if (::bind(fd.get(), addr.get(), addr.length) != 0) {
    return ErrnoToStatus(errno, "bind UDP " + addr.ToString());
  }
  SetBuffers(fd.get());
  return fd;
}

// recvmmsg's arrays, allocated once.
struct ReceiveBatch {
  std::array<std::array<char, kReceiveBufferBytes>, kBatch> buffers;
  std::array<sockaddr_storage, kBatch> from;
  std::array<iovec, kBatch> iov;
  std::array<mmsghdr, kBatch> msgs;

  // Receives up to kBatch datagrams without blocking; returns how many.
  int Receive(int fd) {
    for (int i = 0; i < kBatch; ++i) {
      iov[i] = {buffers[i].data(), buffers[i].size()};
      msgs[i] = {};
      msgs[i].msg_hdr.msg_name = &from[i];
      msgs[i].msg_hdr.msg_namelen = sizeof(from[i]);
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
    }
    const int n = ::recvmmsg(fd, msgs.data(), kBatch, MSG_DONTWAIT, nullptr);
    return std::max(n, 0);
  }
  std::span<const char> Datagram(int i) const {
    return {buffers[i].data(), std::min<size_t>(msgs[i].msg_len, kReceiveBufferBytes)};
  }
};

// Sends datagrams [first, end) of a message to `to` with sendmmsg's arrays
// allocated once. `payload` is the message (nullptr: filler bytes).
struct SendBatch {
  std::array<std::array<char, kKernelUdpHeaderBytes>, kBatch> headers;
  std::array<std::array<iovec, 2>, kBatch> iov;
  std::array<mmsghdr, kBatch> msgs;

  // Returns the number of datagrams sent (< the asked count on EAGAIN with
  // `flags` MSG_DONTWAIT), or -errno on another error before any was sent.
  int Send(int fd, const SocketAddress& to, uint64_t rpc_id, uint32_t total, const char* payload,
           uint32_t first_offset, int flags) {
    int n = 0;
    for (uint64_t off = first_offset; n < kBatch && (off < total || (total == 0 && n == 0));
         off += kKernelUdpMaxPayloadBytes, ++n) {
      const size_t len = std::min<uint64_t>(kKernelUdpMaxPayloadBytes, total - off);
      EncodeKernelUdpHeader(
          {.rpc_id = rpc_id, .offset = static_cast<uint32_t>(off), .total_bytes = total},
          headers[n].data());
      iov[n][0] = {headers[n].data(), kKernelUdpHeaderBytes};
      iov[n][1] = {const_cast<char*>(payload ? payload + off : Filler()), len};
      msgs[n] = {};
      msgs[n].msg_hdr.msg_name = const_cast<sockaddr*>(to.get());
      msgs[n].msg_hdr.msg_namelen = to.length;
      msgs[n].msg_hdr.msg_iov = iov[n].data();
      msgs[n].msg_hdr.msg_iovlen = 2;
    }
    const int sent = ::sendmmsg(fd, msgs.data(), static_cast<unsigned>(n), flags);
    if (sent < 0) return errno == EAGAIN || errno == EWOULDBLOCK ? 0 : -errno;
    return sent;
  }
};

// Polls `fd` for `events` until `deadline` (on `clock`); returns revents.
short PollUntil(int fd, short events, const Clock& clock, TimeNs deadline) {
  const DurationNs left = deadline - clock.NowNs();
  if (left <= 0) return 0;
  pollfd p{fd, events, 0};
  timespec ts{static_cast<time_t>(left / kNsPerSec), static_cast<long>(left % kNsPerSec)};
  return ::ppoll(&p, 1, &ts, nullptr) > 0 ? p.revents : 0;
}

class UdpEchoServer final : public KernelEchoServer {
 public:
  UdpEchoServer(UniqueFd fd, uint16_t port, const Clock& clock, uint64_t response_bytes)
      : fd_(std::move(fd)),
        port_(port),
        clock_(clock),
        response_bytes_(static_cast<uint32_t>(response_bytes)),
        // A fixed-size answer never looks at the request's bytes.
        table_({.keep_payload = response_bytes == 0}),
        receive_(std::make_unique<ReceiveBatch>()),
        send_(std::make_unique<SendBatch>()) {
    thread_ = std::thread([this] { Serve(); });
  }
  ~UdpEchoServer() override { Stop(); }

  void Stop() override {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  uint16_t port() const override { return port_; }
  // After Stop.
  std::string counters() const override {
    const UdpReassembler::Counters& c = table_.counters();
    return "datagrams=" + std::to_string(c.datagrams) + " messages=" + std::to_string(c.completed) +
           " duplicates=" + std::to_string(c.duplicates) +
           " malformed=" + std::to_string(c.malformed) +
           " table_full=" + std::to_string(c.table_full) + " expired=" + std::to_string(c.expired) +
           " send_errors=" + std::to_string(send_errors_);
  }

 private:
  void Serve() {
    while (!stop_) {
      const TimeNs now = clock_.NowNs();
      const TimeNs wake = std::min(now + kServerPollMs * kNsPerMs, table_.NextExpiryNs());
      (void)PollUntil(fd_.get(), POLLIN, clock_, wake);
      table_.Expire(clock_.NowNs());
      for (int n = receive_->Receive(fd_.get()); n > 0; n = receive_->Receive(fd_.get())) {
        const TimeNs at = clock_.NowNs();
        for (int i = 0; i < n; ++i) {
          const UdpAddResult r =
              table_.Add(PeerKeyOf(receive_->from[i]), receive_->Datagram(i), at);
          if (r.outcome != UdpAddOutcome::kComplete) continue;
          SocketAddress to;
          to.storage = receive_->from[i];
          to.length = receive_->msgs[i].msg_hdr.msg_namelen;
          Echo(to, r);
        }
      }
    }
  }

  // Sends the message back (or response_bytes_ of filler under its RPC id),
  // blocking while the socket's buffer is full (the kernel's back-pressure;
  // the bottleneck drains it).
  void Echo(const SocketAddress& to, const UdpAddResult& r) {
    const bool fixed = response_bytes_ > 0;
    const uint32_t total = fixed ? response_bytes_ : r.total_bytes;
    const char* payload = fixed ? nullptr : r.message.data();
    uint32_t offset = 0;
    do {
      const int sent = send_->Send(fd_.get(), to, r.rpc_id, total, payload, offset, 0);
      if (sent <= 0) {
        ++send_errors_;  // this echo is lost, as a dropped datagram would be
        return;
      }
      offset += static_cast<uint32_t>(sent * kKernelUdpMaxPayloadBytes);
    } while (offset < total);
  }

  UniqueFd fd_;
  uint16_t port_;
  const Clock& clock_;
  const uint32_t response_bytes_;  // 0: echo
  UdpReassembler table_;  // server thread only
  std::unique_ptr<ReceiveBatch> receive_;
  std::unique_ptr<SendBatch> send_;
  uint64_t send_errors_ = 0;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

class UdpLoadTransport final : public LoadTransport {
 public:
  UdpLoadTransport(UniqueFd fd, std::vector<SocketAddress> servers, const Clock& clock,
                   int max_outstanding)
      : fd_(std::move(fd)),
        servers_(std::move(servers)),
        clock_(clock),
        table_({.keep_payload = false}),
        rpc_ids_(static_cast<size_t>(max_outstanding), 0),
        queue_(2 * static_cast<size_t>(max_outstanding)),
        receive_(std::make_unique<ReceiveBatch>()),
        send_(std::make_unique<SendBatch>()) {
    failed_.reserve(queue_.size());
  }

  Status Issue(uint32_t tag, int server, uint64_t bytes) override {
    if (tag >= rpc_ids_.size() || server < 0 || server >= static_cast<int>(servers_.size()) ||
        bytes > kKernelUdpMaxMessageBytes) {
      return InvalidArgumentError("kernel-udp: tag, server or size out of range");
    }
    if (queued_ == queue_.size()) return ResourceExhaustedError("kernel-udp: send queue full");
    const uint64_t rpc_id = (++sequence_ << 32) | tag;
    rpc_ids_[tag] = rpc_id;
    queue_[(queue_head_ + queued_) % queue_.size()] = {
        .rpc_id = rpc_id, .server = server, .total = static_cast<uint32_t>(bytes), .sent = 0};
    ++queued_;
    Flush();
    return OkStatus();
  }

  void Wait(TimeNs deadline, CompletionSink& sink) override {
    while (true) {
      Flush();
      int done = 0;
      for (uint32_t tag : failed_) {
        sink.Done(tag, false);
        ++done;
      }
      failed_.clear();
      for (int n = receive_->Receive(fd_.get()); n > 0; n = receive_->Receive(fd_.get())) {
        const TimeNs at = clock_.NowNs();
        for (int i = 0; i < n; ++i) {
          const UdpAddResult r =
              table_.Add(PeerKeyOf(receive_->from[i]), receive_->Datagram(i), at);
          if (r.outcome != UdpAddOutcome::kComplete) continue;
          const auto tag = static_cast<uint32_t>(r.rpc_id & 0xffff'ffff);
          // A stale answer (its RPC was abandoned, the tag reused) is ignored.
          if (tag >= rpc_ids_.size() || rpc_ids_[tag] != r.rpc_id) continue;
          rpc_ids_[tag] = 0;
          sink.Done(tag, true);
          ++done;
        }
      }
      table_.Expire(clock_.NowNs());
      if (done > 0 || clock_.NowNs() >= deadline) return;
      const short events = POLLIN | (queued_ > 0 ? POLLOUT : 0);
      (void)PollUntil(fd_.get(), events, clock_, std::min(deadline, table_.NextExpiryNs()));
    }
  }

  std::string first_error() const override { return first_error_; }

 private:
  struct Pending {
    uint64_t rpc_id = 0;
    int server = 0;
    uint32_t total = 0;
    uint32_t sent = 0;  // bytes of payload handed to the kernel
  };

  // Sends queued requests, in order, until the socket's buffer is full.
  void Flush() {
    while (queued_ > 0) {
      Pending& p = queue_[queue_head_];
      const auto tag = static_cast<uint32_t>(p.rpc_id & 0xffff'ffff);
      bool finished = rpc_ids_[tag] != p.rpc_id;  // abandoned by the driver meanwhile
      if (!finished) {
        const int sent = send_->Send(fd_.get(), servers_[p.server], p.rpc_id, p.total, nullptr,
                                     p.sent, MSG_DONTWAIT);
        if (sent == 0) return;  // full: POLLOUT
        if (sent < 0) {
          if (first_error_.empty()) {
            first_error_ =
                ErrnoToStatus(-sent, "kernel-udp sendmmsg to " + servers_[p.server].ToString())
                    .ToString();
          }
          rpc_ids_[tag] = 0;
          failed_.push_back(tag);
          finished = true;
        } else {
          p.sent = static_cast<uint32_t>(std::min<uint64_t>(
              p.total, p.sent + uint64_t{kKernelUdpMaxPayloadBytes} * static_cast<uint64_t>(sent)));
          finished = p.sent >= p.total;
        }
      }
      if (!finished) continue;
      queue_head_ = (queue_head_ + 1) % queue_.size();
      --queued_;
    }
  }

  UniqueFd fd_;
  std::vector<SocketAddress> servers_;
  const Clock& clock_;
  UdpReassembler table_;           // responses being reassembled
  std::vector<uint64_t> rpc_ids_;  // by tag: the RPC in flight, 0 if none
  uint64_t sequence_ = 0;
  std::vector<Pending> queue_;  // a ring: requests not fully sent yet
  size_t queue_head_ = 0;
  size_t queued_ = 0;
  std::vector<uint32_t> failed_;  // tags whose send failed, reported at Wait
  std::unique_ptr<ReceiveBatch> receive_;
  std::unique_ptr<SendBatch> send_;
  std::string first_error_;
};

}  // namespace

Result<std::unique_ptr<KernelEchoServer>> StartKernelUdpEchoServer(const std::string& ip,
                                                                   uint16_t port,
                                                                   const Clock& clock,
                                                                   uint64_t response_bytes) {
  if (response_bytes > kKernelUdpMaxMessageBytes) {
    return InvalidArgumentError("kernel-udp: response size " + std::to_string(response_bytes) +
                                " is over " + std::to_string(kKernelUdpMaxMessageBytes) + " B");
  }
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, BoundUdp(ip, port));
  WHARF_ASSIGN_OR_RETURN(uint16_t bound, LocalPort(fd.get()));
  return std::unique_ptr<KernelEchoServer>(
      new UdpEchoServer(std::move(fd), bound, clock, response_bytes));
}

Result<std::unique_ptr<LoadTransport>> OpenKernelUdpTransport(const std::string& local_ip,
                                                              std::vector<SocketAddress> servers,
                                                              const Clock& clock,
                                                              int max_outstanding) {
  if (max_outstanding < 1) return InvalidArgumentError("kernel-udp: max_outstanding < 1");
  WHARF_ASSIGN_OR_RETURN(UniqueFd fd, BoundUdp(local_ip, 0));
  return std::unique_ptr<LoadTransport>(
      new UdpLoadTransport(std::move(fd), std::move(servers), clock, max_outstanding));
}

}  // namespace wharf::bench
