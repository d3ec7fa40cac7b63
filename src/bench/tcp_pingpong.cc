// TCP ping-pong: the client interleaves sending and receiving (a large
// request could otherwise deadlock against an echo server that is blocked
// writing back into a full client receive buffer); the server echoes what it
// reads until the client closes.
#include "bench/tcp_pingpong.h"

#include <poll.h>
#include <sys/socket.h>

#include <algorithm>
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
constexpr size_t kServerBufferBytes = 256 << 10;
// Blocking server calls wake this often to notice the deadline.
constexpr DurationNs kServerWakeNs = 100 * kNsPerMs;

// Waits for the one client connection; -1 on deadline or error.
int AcceptBefore(int listen_fd, const Clock& clock, TimeNs deadline_ns) {
  // Non-blocking, so that a connection reset between poll and accept does
  // not leave the server stuck in accept.
  if (!SetNonBlocking(listen_fd, true).ok()) return -1;
  while (clock.NowNs() < deadline_ns) {
    pollfd p{listen_fd, POLLIN, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(kServerWakeNs / kNsPerMs));
    if (ready < 0 && errno != EINTR) return -1;
    if (ready <= 0) continue;
    const int fd = ::accept4(listen_fd, nullptr, nullptr, SOCK_CLOEXEC);
    if (fd >= 0) return fd;
    if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR && errno != ECONNABORTED) {
      return -1;
    }
  }
  return -1;
}

// The forked child's loop. `buffer` was allocated before the fork.
int ServeTcpEcho(int listen_fd, WaitMode mode, std::vector<std::byte>& buffer, const Clock& clock,
                 TimeNs deadline_ns) {
  UniqueFd conn(AcceptBefore(listen_fd, clock, deadline_ns));
  if (!conn.valid()) return kServerDeadlineExitCode;
  ::close(listen_fd);
  const bool poll = mode == WaitMode::kBusyPoll;
  if (!SetTcpNoDelay(conn.get()).ok() || !SetNonBlocking(conn.get(), poll).ok()) {
    return kServerSocketErrorExitCode;
  }
  if (!poll) {
    if (!SetReceiveTimeout(conn.get(), kServerWakeNs).ok()) return kServerSocketErrorExitCode;
    timeval tv{0, static_cast<suseconds_t>(kServerWakeNs / kNsPerUs)};
    if (::setsockopt(conn.get(), SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv)) != 0) {
      return kServerSocketErrorExitCode;
    }
  }
  uint32_t spins = 0;
  // True when it is time to give up; reads the clock only every so often
  // while spinning.
  auto expired = [&]() {
    if (poll && ++spins % kSpinsPerClockCheck != 0) return false;
    return clock.NowNs() >= deadline_ns;
  };
  while (true) {
    const ssize_t n = ::recv(conn.get(), buffer.data(), buffer.size(), 0);
    if (n == 0) return 0;  // the client closed: the run is over
    if (n < 0) {
      if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return kServerSocketErrorExitCode;
      }
      if (expired()) return kServerDeadlineExitCode;
      continue;
    }
    size_t sent = 0;
    while (sent < static_cast<size_t>(n)) {
      const ssize_t m =
          ::send(conn.get(), buffer.data() + sent, static_cast<size_t>(n) - sent, MSG_NOSIGNAL);
      if (m > 0) {
        sent += static_cast<size_t>(m);
      } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
        return kServerSocketErrorExitCode;
      } else if (expired()) {
        return kServerDeadlineExitCode;
      }
    }
  }
}

// The client half: one connection to the echo server. Owned by
// RunTcpPingPong for one run; the calling thread only.
class TcpClient final : public PingPongClient {
 public:
  static Result<std::unique_ptr<TcpClient>> Connect(const SocketAddress& server,
                                                    const PingPongOptions& options,
                                                    const Clock& clock) {
    WHARF_ASSIGN_OR_RETURN(UniqueFd fd, OpenSocket(server.family(), SOCK_STREAM));
    WHARF_RETURN_IF_ERROR(SetTcpNoDelay(fd.get()));
    // Connect without blocking so that an unreachable address costs
    // reply_timeout_ns, not the kernel's SYN retries.
    WHARF_RETURN_IF_ERROR(SetNonBlocking(fd.get(), true));
    if (::connect(fd.get(), server.get(), server.length) != 0 && errno != EINPROGRESS) {
      return ErrnoToStatus(errno, "connect to " + server.ToString());
    }
    pollfd p{fd.get(), POLLOUT, 0};
    const int ready = ::poll(&p, 1, static_cast<int>(options.reply_timeout_ns / kNsPerMs) + 1);
    if (ready <= 0) {
      return UnavailableError("connect to " + server.ToString() + ": no answer within " +
                              std::to_string(options.reply_timeout_ns / kNsPerMs) + " ms");
    }
    int error = 0;
    socklen_t length = sizeof(error);
    if (::getsockopt(fd.get(), SOL_SOCKET, SO_ERROR, &error, &length) != 0) error = errno;
    if (error != 0) return ErrnoToStatus(error, "connect to " + server.ToString());
    const bool poll = options.mode == WaitMode::kBusyPoll;
    WHARF_RETURN_IF_ERROR(SetNonBlocking(fd.get(), poll));
    if (!poll) WHARF_RETURN_IF_ERROR(SetReceiveTimeout(fd.get(), options.reply_timeout_ns));
    return std::unique_ptr<TcpClient>(new TcpClient(std::move(fd), server, options, clock));
  }

  Result<Outcome> RoundTrip(uint64_t /*seq*/, TimeNs deadline_ns) override {
    const size_t size = request_.size();
    size_t sent = 0;
    size_t received = 0;
    uint32_t spins = 0;
    while (received < size) {
      if (sent < size) {
        const ssize_t n =
            ::send(fd_.get(), request_.data() + sent, size - sent, MSG_DONTWAIT | MSG_NOSIGNAL);
        if (n > 0) {
          sent += static_cast<size_t>(n);
        } else if (errno != EAGAIN && errno != EWOULDBLOCK && errno != EINTR) {
          return ErrnoToStatus(errno, "send to " + server_.ToString());
        }
      }
      // Blocking mode waits in recv only once the whole request is out;
      // before that it must not sleep on one direction alone.
      if (!poll_ && sent < size) {
        pollfd p{fd_.get(), POLLIN | POLLOUT, 0};
        const DurationNs left_ns = deadline_ns - clock_.NowNs();
        if (left_ns <= 0) return TimedOut();
        (void)::poll(&p, 1, static_cast<int>(left_ns / kNsPerMs) + 1);
      }
      const int flags = (poll_ || sent < size) ? MSG_DONTWAIT : 0;
      const ssize_t n = ::recv(fd_.get(), reply_.data() + received, size - received, flags);
      if (n > 0) {
        received += static_cast<size_t>(n);
      } else if (n == 0) {
        return UnavailableError("echo server at " + server_.ToString() + " closed the connection");
      } else if (errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR) {
        if (poll_ && ++spins % kSpinsPerClockCheck != 0) continue;
        if (clock_.NowNs() >= deadline_ns) return TimedOut();
      } else {
        return ErrnoToStatus(errno, "recv from " + server_.ToString());
      }
    }
    return Outcome::kOk;
  }

  // The server reads end-of-file and exits.
  void Finish() override { fd_.Reset(); }

 private:
  TcpClient(UniqueFd fd, const SocketAddress& server, const PingPongOptions& options,
            const Clock& clock)
      : fd_(std::move(fd)),
        server_(server),
        clock_(clock),
        poll_(options.mode == WaitMode::kBusyPoll),
        reply_timeout_ns_(options.reply_timeout_ns),
        request_(options.size_bytes, std::byte{0x5a}),
        reply_(options.size_bytes) {}

  Status TimedOut() const {
    return DeadlineExceededError("no complete echo from " + server_.ToString() + " within " +
                                 std::to_string(reply_timeout_ns_ / kNsPerMs) + " ms");
  }

  UniqueFd fd_;
  SocketAddress server_;
  const Clock& clock_;
  bool poll_;
  DurationNs reply_timeout_ns_;
  std::vector<std::byte> request_;
  std::vector<std::byte> reply_;
};

}  // namespace

Result<PingPongResult> RunTcpPingPong(const PingPongOptions& options, const Clock& clock,
                                      const ProgressFn& progress) {
  WHARF_RETURN_IF_ERROR(ValidatePingPongOptions(options, kMaxTcpRequestBytes));
  WHARF_ASSIGN_OR_RETURN(SocketAddress address, ParseSocketAddress(options.address, options.port));
  WHARF_ASSIGN_OR_RETURN(UniqueFd listen_fd, OpenSocket(address.family(), SOCK_STREAM));
  int one = 1;
  if (::setsockopt(listen_fd.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) != 0) {
    return ErrnoToStatus(errno, "setsockopt(SO_REUSEADDR)");
  }
  if (::bind(listen_fd.get(), address.get(), address.length) != 0) {
    return ErrnoToStatus(errno, "bind TCP " + address.ToString());
  }
  if (::listen(listen_fd.get(), 1) != 0) return ErrnoToStatus(errno, "listen");
  WHARF_ASSIGN_OR_RETURN(uint16_t port, LocalPort(listen_fd.get()));
  address.set_port(port);

  const PinPlan pinning = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  std::vector<std::byte> server_buffer(std::min(kServerBufferBytes, options.size_bytes));
  const TimeNs server_deadline_ns = ServerDeadline(options, clock);
  const int fd = listen_fd.get();
  WHARF_ASSIGN_OR_RETURN(
      ChildProcess server, ChildProcess::Fork(pinning.pin ? pinning.server_cpu : -1, [&]() {
        return ServeTcpEcho(fd, options.mode, server_buffer, clock, server_deadline_ns);
      }));
  // The child holds its own copy; ours must go so that only the child accepts.
  listen_fd.Reset();

  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<TcpClient> client,
                         TcpClient::Connect(address, options, clock));
  const std::string what = "tcp " + std::string(WaitModeName(options.mode)) + " " +
                           std::to_string(options.size_bytes) + " B";
  WHARF_ASSIGN_OR_RETURN(PingPongResult result,
                         RunPingPongLoop(options, pinning, clock, progress, what, server, *client));
  result.port = port;
  return result;
}

}  // namespace wharf::bench
