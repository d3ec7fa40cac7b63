// UDP ping-pong: a connected client socket and an echo server that answers
// each datagram to its sender. An empty datagram tells the server to exit.
#include "bench/udp_pingpong.h"

#include <sys/socket.h>

#include <cerrno>
#include <memory>
#include <vector>

#include "bench/child_process.h"
#include "bench/sockets.h"

namespace wharf::bench {
namespace {

// Exit codes of the echo server (besides kChildPinFailedExitCode).
constexpr int kServerDeadlineExitCode = 3;
constexpr int kServerSocketErrorExitCode = 4;

// The forked child's loop. `buffer` was allocated before the fork.
int ServeUdpEcho(int fd, WaitMode mode, std::vector<std::byte>& buffer, const Clock& clock,
                 TimeNs deadline_ns) {
  const bool poll = mode == WaitMode::kBusyPoll;
  // Blocking: wake up now and then to notice the deadline.
  if (!SetNonBlocking(fd, poll).ok()) return kServerSocketErrorExitCode;
  if (!poll && !SetReceiveTimeout(fd, 100 * kNsPerMs).ok()) return kServerSocketErrorExitCode;
  uint32_t spins = 0;
  while (true) {
    sockaddr_storage peer;
    socklen_t peer_length = sizeof(peer);
    const ssize_t n = ::recvfrom(fd, buffer.data(), buffer.size(), 0,
                                 reinterpret_cast<sockaddr*>(&peer), &peer_length);
    if (n == 0) return 0;  // the client's "stop"
    if (n > 0) {
      while (::sendto(fd, buffer.data(), static_cast<size_t>(n), 0,
                      reinterpret_cast<sockaddr*>(&peer), peer_length) < 0) {
        if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) break;  // reply lost
      }
      continue;
    }
    if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
      if (poll && ++spins % kSpinsPerClockCheck != 0) continue;
      if (clock.NowNs() >= deadline_ns) return kServerDeadlineExitCode;
      continue;
    }
    return kServerSocketErrorExitCode;
  }
}

// The client half: a socket connected to the echo server. Owned by
// RunUdpPingPong for one run; the calling thread only.
class UdpClient final : public PingPongClient {
 public:
  static Result<std::unique_ptr<UdpClient>> Connect(const SocketAddress& server,
                                                    const PingPongOptions& options,
                                                    const Clock& clock) {
    WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(server.family(), SOCK_DGRAM));
    if (::connect(fd.get(), server.get(), server.length) != 0) {
      return ErrnoToStatus(errno, "connect to " + server.ToString());
    }
    const bool poll = options.mode == WaitMode::kBusyPoll;
    WHARF_RETURN_IF_ERROR(SetNonBlocking(fd.get(), poll));
    if (!poll) WHARF_RETURN_IF_ERROR(SetReceiveTimeout(fd.get(), options.reply_timeout_ns));
    return std::unique_ptr<UdpClient>(new UdpClient(std::move(fd), server, options, clock));
  }

  Result<Outcome> RoundTrip(uint64_t seq, TimeNs deadline_ns) override {
    StampSequence(seq, request_.data(), request_.size());
    uint32_t spins = 0;
    while (::send(fd_.get(), request_.data(), request_.size(), 0) < 0) {
      if (errno == ECONNREFUSED) return Refused();
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return ErrnoToStatus(errno, "send to " + server_.ToString());
      }
      if (++spins % kSpinsPerClockCheck == 0 && clock_.NowNs() >= deadline_ns) {
        return Outcome::kTimedOut;
      }
    }
    while (true) {
      const ssize_t n = ::recv(fd_.get(), reply_.data(), reply_.size(), 0);
      if (n >= 0) {
        // Anything else is the late echo of a request already resent.
        if (static_cast<size_t>(n) == request_.size() &&
            HasSequence(seq, reply_.data(), request_.size())) {
          return Outcome::kOk;
        }
        continue;
      }
      if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        // Blocking: SO_RCVTIMEO expired. Polling: look at the clock now and then.
        if (poll_ && ++spins % kSpinsPerClockCheck != 0) continue;
        if (clock_.NowNs() >= deadline_ns) return Outcome::kTimedOut;
        continue;
      }
      if (errno == ECONNREFUSED) return Refused();
      return ErrnoToStatus(errno, "recv from " + server_.ToString());
    }
  }

  void Finish() override { (void)::send(fd_.get(), nullptr, 0, 0); }

 private:
  UdpClient(UniqueFd fd, const SocketAddress& server, const PingPongOptions& options,
            const Clock& clock)
      : fd_(std::move(fd)),
        server_(server),
        clock_(clock),
        poll_(options.mode == WaitMode::kBusyPoll),
        request_(options.size_bytes, std::byte{0x5a}),
        reply_(options.size_bytes + 1) {}

  Status Refused() const {
    return UnavailableError("echo server at " + server_.ToString() + " refused (port unreachable)");
  }

  UniqueFd fd_;
  SocketAddress server_;
  const Clock& clock_;
  bool poll_;
  std::vector<std::byte> request_;
  std::vector<std::byte> reply_;  // one byte more than a request, to see oversize replies
};

}  // namespace

Result<PingPongResult> RunUdpPingPong(const PingPongOptions& options, const Clock& clock,
                                      const ProgressFn& progress) {
  WHARF_RETURN_IF_ERROR(ValidatePingPongOptions(options, kMaxUdpPayloadBytes));
  WHARF_ASSIGN_OR_RETURN(SocketAddress address, ParseSocketAddress(options.address, options.port));
  WHARF_ASSIGN_OR_RETURN(UniqueFd server_fd, OpenSocket(address.family(), SOCK_DGRAM));
  if (::bind(server_fd.get(), address.get(), address.length) != 0) {
    return ErrnoToStatus(errno, "bind UDP " + address.ToString());
  }
  WHARF_ASSIGN_OR_RETURN(uint16_t port, LocalPort(server_fd.get()));
  address.set_port(port);

  const PinPlan pinning = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  std::vector<std::byte> server_buffer(kMaxUdpPayloadBytes + 1);
  const TimeNs server_deadline_ns = ServerDeadline(options, clock);
  const int fd = server_fd.get();
  WHARF_ASSIGN_OR_RETURN(
      ChildProcess server, ChildProcess::Fork(pinning.pin ? pinning.server_cpu : -1, [&]() {
        return ServeUdpEcho(fd, options.mode, server_buffer, clock, server_deadline_ns);
      }));
  server_fd.Reset();

  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<UdpClient> client,
                         UdpClient::Connect(address, options, clock));
  const std::string what = "udp " + std::string(WaitModeName(options.mode)) + " " +
                           std::to_string(options.size_bytes) + " B";
  WHARF_ASSIGN_OR_RETURN(PingPongResult result,
                         RunPingPongLoop(options, pinning, clock, progress, what, server, *client));
  result.port = port;
  return result;
}

}  // namespace wharf::bench
