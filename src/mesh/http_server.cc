// http_server.cc: HttpServer's sockets and threads. cpp-httplib (0.11.4,
// the compiled libcpp-httplib) parses each request head and writes its
// response (HttpExchange, http_exchange.cc); its sockets, threads and
// listen loop are not used, because in 0.11.4 they bound nothing:
//   - each accepted socket becomes one task that holds a worker for the
//     connection's whole life, so `threads` idle clients stop the server for
//     their keep-alive timeout; the task queue is unbounded;
//   - an idle keep-alive connection is watched by a loop that polls every
//     10 ms and sleeps 1 ms (keep_alive()), and accept() retries every 1 ms
//     while the process is out of descriptors: both spin;
//   - a request line or header line is read whole into memory before its
//     length is checked, and the keep-alive timeout is in whole seconds;
//   - Server's constructor sets SIGPIPE to SIG_IGN for the whole process.
//
// So the sockets are ours: one poller thread (epoll) accepts, keeps every
// connection and reads request heads into a buffer of at most
// max_request_header_bytes; a complete head goes to one of `threads`
// workers, which hands it to HttpExchange::Answer. A connection holds a
// worker only while its response is being made and sent.
//
// Who enforces what:
//   ours:    max_connections (the longest-idle connection is closed to make
//            room, else the newcomer gets a 503), max_request_header_bytes
//            (431, or 414 when the request line alone is longer), the
//            read_timeout for a whole head and for sending a response, GET
//            and HEAD only (405), no request bodies (413), at most
//            kMaxRequestsPerConnection per connection, a throwing handler
//            (500), SIGPIPE left alone (every send has MSG_NOSIGNAL).
//   library: compiled into the .so, not settable here: a request line over
//            CPPHTTPLIB_REQUEST_URI_MAX_LENGTH (8192) gets 414, a header line
//            over CPPHTTPLIB_HEADER_MAX_LENGTH (8192) or any head it cannot
//            parse gets 400 (both only matter when max_request_header_bytes
//            is raised past 8192), an unknown method or version gets 400, a
//            bad Range header 416. We close the connection after any of them.
#include "mesh/http_server.h"

#include <netinet/in.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <deque>
#include <exception>
#include <list>
#include <string_view>
#include <system_error>
#include <thread>
#include <unordered_map>

#include "base/log.h"
#include "base/mutex.h"
#include "base/unique_fd.h"
#include "mesh/http_exchange.h"

namespace wharf::mesh {
namespace {

// The kernel caps it at net.core.somaxconn. Connections waiting there cost
// the kernel, not us; a deep backlog lets a burst be accepted (and refused
// or made room for) at once instead of having its SYNs dropped and retried
// a second or more later.
constexpr int kListenBacklog = 1024;
// Accepts per wake-up of the poller, so that a flood of connections cannot
// starve the ones already open.
constexpr int kMaxAcceptsPerWake = 128;
constexpr int kMaxEvents = 64;
// After this many responses a connection is closed ("Connection: close" on
// the last one), so that no client keeps a connection forever.
constexpr size_t kMaxRequestsPerConnection = 100;
// A connection closed after an error response is read and discarded from
// for up to this long and this many bytes, so that the client's unsent
// request does not turn our close into a reset that destroys the response.
constexpr DurationNs kMaxDrainNs = kNsPerSec;
constexpr size_t kMaxDrainBytes = 1 << 20;
// Out of descriptors (or kernel memory), accepting stops this long instead
// of retrying at once.
constexpr DurationNs kAcceptPauseNs = 100 * kNsPerMs;
constexpr int kMaxThreads = 64;
constexpr size_t kMaxConnections = 65536;
constexpr size_t kMinHeaderBytes = 256;
constexpr size_t kMaxHeaderBytes = 1 << 20;
constexpr DurationNs kMaxReadTimeoutNs = 3600 * kNsPerSec;

// epoll data of the poller's own fds; connections are numbered above them
// (never reused, so that an event for a connection closed earlier in the
// same batch finds nothing).
constexpr uint64_t kListenId = 0;
constexpr uint64_t kWakeId = 1;
constexpr uint64_t kStopId = 2;
constexpr uint64_t kFirstConnId = 3;

constexpr std::string_view kPlainText = "text/plain; charset=utf-8";

// A whole response the poller writes itself (it has no parsed request).
std::string CannedResponse(std::string_view status_line, std::string_view body) {
  return "HTTP/1.1 " + std::string(status_line) + "\r\nContent-Type: " + std::string(kPlainText) +
         "\r\nContent-Length: " + std::to_string(body.size()) + "\r\nConnection: close\r\n\r\n" +
         std::string(body);
}

// One non-blocking send of a short response; what does not fit is lost
// (the connection is being closed anyway).
void SendBestEffort(int fd, std::string_view bytes) {
  [[maybe_unused]] const ssize_t sent =
      ::send(fd, bytes.data(), bytes.size(), MSG_NOSIGNAL | MSG_DONTWAIT);
}

void SignalEventFd(int fd) {
  const uint64_t one = 1;
  [[maybe_unused]] const ssize_t n = ::write(fd, &one, sizeof(one));
}

int MillisUntil(TimeNs now, TimeNs deadline) {
  if (deadline <= now) return 0;
  return static_cast<int>(std::min<TimeNs>((deadline - now + kNsPerMs - 1) / kNsPerMs, INT32_MAX));
}

Status CheckOptions(const HttpServerOptions& o) {
  const std::string where = "http.listen " + o.listen.ToString();
  if (o.listen.family() == transport::NetAddress::Family::kNone) {
    return InvalidArgumentError("http.listen: no address given");
  }
  if (o.threads < 1 || o.threads > kMaxThreads) {
    return InvalidArgumentError(where + ": threads must be 1.." + std::to_string(kMaxThreads) +
                                ", got " + std::to_string(o.threads));
  }
  if (o.max_connections < 1 || o.max_connections > kMaxConnections) {
    return InvalidArgumentError(where + ": max_connections must be 1.." +
                                std::to_string(kMaxConnections) + ", got " +
                                std::to_string(o.max_connections));
  }
  if (o.read_timeout < kNsPerMs || o.read_timeout > kMaxReadTimeoutNs) {
    return InvalidArgumentError(where + ": read_timeout must be 1ms..1h, got " +
                                std::to_string(o.read_timeout) + "ns");
  }
  if (o.max_request_header_bytes < kMinHeaderBytes ||
      o.max_request_header_bytes > kMaxHeaderBytes) {
    return InvalidArgumentError(
        where + ": max_request_header_bytes must be " + std::to_string(kMinHeaderBytes) + ".." +
        std::to_string(kMaxHeaderBytes) + ", got " + std::to_string(o.max_request_header_bytes));
  }
  return OkStatus();
}

}  // namespace

// Owned by HttpServer. Start and the destructor run on the owner's thread;
// the poller thread owns the sockets and every Conn not being answered; a
// worker owns a Conn from taking it off ready_ until it puts it on returned_
// (the hand-overs go through mu_). Counters are atomics any thread reads.
class HttpServer::Impl {
 public:
  Impl(const HttpServerOptions& options, std::unique_ptr<HttpExchange> exchange);
  // Stops and joins every thread started, then closes every socket.
  ~Impl();
  Impl(const Impl&) = delete;
  Impl& operator=(const Impl&) = delete;

  // Binds and listens on options.listen and makes the epoll set.
  Status Open();
  // Starts the poller and the workers.
  Status Run();

  transport::NetAddress address() const { return address_; }
  HttpServerCounters Counters() const;

 private:
  // One connection. The state machine:
  //   kWaiting --whole head--> kAnswering --response sent--> kWaiting
  //   kAnswering --error, "Connection: close", last allowed--> kDraining
  //   kWaiting --head over the limit (431/414 sent)--> kDraining
  //   kWaiting --read_timeout, end of input, or made room for--> closed
  //   kDraining --end of input, kMaxDrainNs, kMaxDrainBytes, made room for--> closed
  struct Conn {
    enum class State : uint8_t {
      kWaiting,    // poller's: reading a head, in waiting_ (and epoll)
      kAnswering,  // a worker's: in ready_ or being answered; in no list, not in epoll
      kDraining,   // poller's: write side shut, discarding input, in draining_ (and epoll)
    };
    uint64_t id = 0;
    UniqueFd fd;
    State state = State::kWaiting;
    bool in_epoll = false;
    // Received and not yet answered: at most max_request_header_bytes (a
    // head, then whatever a pipelining client sent after it).
    std::string in;
    size_t scanned = 0;              // bytes of `in` searched for the head's end
    size_t head_bytes = 0;           // the complete head at the front of `in`, when kAnswering
    TimeNs deadline_ns = 0;          // kWaiting: for the whole head; kDraining: to close
    std::list<Conn*>::iterator pos;  // in waiting_ or draining_
    size_t requests = 0;             // answered on this connection
    size_t drained_bytes = 0;
    bool close_after = false;  // set by the worker: drain and close instead of waiting
  };

  // Poller thread.
  void PollerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void AcceptAll(TimeNs now) ABSL_LOCKS_EXCLUDED(mu_);
  void Admit(UniqueFd fd, TimeNs now) ABSL_LOCKS_EXCLUDED(mu_);
  void StartWaiting(Conn& conn, TimeNs now) ABSL_LOCKS_EXCLUDED(mu_);
  void ReadHead(Conn& conn, TimeNs now) ABSL_LOCKS_EXCLUDED(mu_);
  bool FindHeadEnd(Conn& conn) const;
  void Dispatch(Conn& conn) ABSL_LOCKS_EXCLUDED(mu_);
  void TakeBack(TimeNs now) ABSL_LOCKS_EXCLUDED(mu_);
  void StartDraining(Conn& conn, TimeNs now);
  void Drain(Conn& conn);
  void Close(Conn& conn);
  void Expire(TimeNs now);
  int WaitMillis(TimeNs now) const;
  bool Watch(Conn& conn);
  void Unwatch(Conn& conn);

  // Worker threads.
  void WorkerLoop() ABSL_LOCKS_EXCLUDED(mu_);
  void Answer(Conn& conn);

  const HttpServerOptions options_;
  const std::unique_ptr<HttpExchange> exchange_;
  const std::string response_414_;    // CannedResponse, naming the limit
  const std::string response_431_;
  const std::string response_503_;
  const Clock& clock_;
  const DurationNs drain_ns_;
  transport::NetAddress address_;  // set by Open

  UniqueFd listen_fd_;
  UniqueFd epoll_fd_;
  UniqueFd wake_fd_;  // eventfd: workers put a Conn on returned_; the poller drains it
  UniqueFd stop_fd_;  // eventfd: written once by the destructor, never drained

  // Poller thread only.
  std::unordered_map<uint64_t, std::unique_ptr<Conn>> conns_;  // every open connection
  std::list<Conn*> waiting_;   // kWaiting, by deadline (oldest first)
  std::list<Conn*> draining_;  // kDraining, by deadline
  uint64_t next_conn_id_ = kFirstConnId;
  TimeNs accept_resume_ns_ = 0;  // accepting paused until then; 0: not paused
  RateLimitedLogger accept_log_;

  Mutex mu_;
  CondVar work_cv_;                                   // ready_ gained a Conn, or stopping_
  std::deque<Conn*> ready_ ABSL_GUARDED_BY(mu_);      // heads to answer, oldest first
  std::vector<Conn*> returned_ ABSL_GUARDED_BY(mu_);  // answered, back to the poller
  bool stopping_ ABSL_GUARDED_BY(mu_) = false;

  std::atomic<uint64_t> accepted_{0};
  std::atomic<uint64_t> open_{0};
  std::atomic<uint64_t> rejected_{0};
  std::atomic<uint64_t> timed_out_{0};

  std::thread poller_;
  std::vector<std::thread> workers_;
};

HttpServer::Impl::Impl(const HttpServerOptions& options, std::unique_ptr<HttpExchange> exchange)
    : options_(options),
      exchange_(std::move(exchange)),
      response_414_(CannedResponse(
          "414 URI Too Long",
          "request line over " + std::to_string(options.max_request_header_bytes) + " bytes\n")),
      response_431_(CannedResponse(
          "431 Request Header Fields Too Large",
          "request head over " + std::to_string(options.max_request_header_bytes) + " bytes\n")),
      response_503_(CannedResponse("503 Service Unavailable", "too many connections\n")),
      clock_(SystemClock::Get()),
      drain_ns_(std::min(options.read_timeout, kMaxDrainNs)),
      accept_log_(clock_, 10 * kNsPerSec) {}

HttpServer::Impl::~Impl() {
  if (stop_fd_.valid()) SignalEventFd(stop_fd_.get());
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  work_cv_.NotifyAll();
  if (poller_.joinable()) poller_.join();
  for (std::thread& worker : workers_) {
    if (worker.joinable()) worker.join();
  }
  // conns_ closes every connection's socket as it is destroyed.
}

Status HttpServer::Impl::Open() {
  const transport::NetAddress& at = options_.listen;
  const std::string where = "http.listen " + at.ToString();
  listen_fd_.Reset(
      ::socket(at.is_v4() ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
  if (!listen_fd_.valid()) return ErrnoToStatus(errno, where + ": socket");
  const int one = 1;
  // A restarted wharfd binds again while the old connections sit in TIME_WAIT.
  ::setsockopt(listen_fd_.get(), SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
  // [::] means IPv6 only: what was asked for, not IPv4 as well.
  if (at.is_v6()) ::setsockopt(listen_fd_.get(), IPPROTO_IPV6, IPV6_V6ONLY, &one, sizeof(one));
  sockaddr_storage addr{};
  const size_t len = at.ToSockaddr(&addr);
  if (::bind(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), static_cast<socklen_t>(len)) !=
      0) {
    return ErrnoToStatus(errno, where);
  }
  if (::listen(listen_fd_.get(), kListenBacklog) != 0) {
    return ErrnoToStatus(errno, where + ": listen");
  }
  socklen_t bound_len = sizeof(addr);
  if (::getsockname(listen_fd_.get(), reinterpret_cast<sockaddr*>(&addr), &bound_len) != 0) {
    return ErrnoToStatus(errno, where + ": getsockname");
  }
  WHARF_ASSIGN_OR_RETURN(
      address_, transport::NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&addr), bound_len));
  exchange_->set_name("http " + address_.ToString());

  epoll_fd_.Reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_fd_.valid()) return ErrnoToStatus(errno, where + ": epoll_create1");
  wake_fd_.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  stop_fd_.Reset(::eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC));
  if (!wake_fd_.valid() || !stop_fd_.valid()) return ErrnoToStatus(errno, where + ": eventfd");
  for (const auto& [fd, id] :
       {std::pair{listen_fd_.get(), kListenId}, std::pair{wake_fd_.get(), kWakeId},
        std::pair{stop_fd_.get(), kStopId}}) {
    epoll_event event{};
    event.events = EPOLLIN;
    event.data.u64 = id;
    if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, fd, &event) != 0) {
      return ErrnoToStatus(errno, where + ": epoll_ctl");
    }
  }
  return OkStatus();
}

Status HttpServer::Impl::Run() {
  try {
    poller_ = std::thread([this] {
      pthread_setname_np(pthread_self(), "wharf-http-poll");
      PollerLoop();
    });
    for (int i = 0; i < options_.threads; ++i) {
      workers_.emplace_back([this] {
        pthread_setname_np(pthread_self(), "wharf-http");
        WorkerLoop();
      });
    }
  } catch (const std::system_error& e) {
    return ResourceExhaustedError("http.listen " + address_.ToString() +
                                  ": starting threads: " + e.what());
  }
  return OkStatus();
}

HttpServerCounters HttpServer::Impl::Counters() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  const HttpExchange::Counts answered = exchange_->counts();
  return {
      .accepted_connections = accepted_.load(kRelaxed),
      .open_connections = open_.load(kRelaxed),
      .rejected_connections = rejected_.load(kRelaxed),
      .timed_out_connections = timed_out_.load(kRelaxed),
      .requests = answered.requests,
      .not_found = answered.not_found,
      .bad_requests = answered.bad_requests,
      .handler_errors = answered.handler_errors,
  };
}

// ---- Poller thread ----

void HttpServer::Impl::PollerLoop() {
  std::array<epoll_event, kMaxEvents> events;
  for (;;) {
    TimeNs now = clock_.NowNs();
    Expire(now);
    if (accept_resume_ns_ != 0 && now >= accept_resume_ns_) {
      epoll_event event{};
      event.events = EPOLLIN;
      event.data.u64 = kListenId;
      if (::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, listen_fd_.get(), &event) == 0) {
        accept_resume_ns_ = 0;
      } else {
        accept_resume_ns_ = now + kAcceptPauseNs;
      }
    }
    const int n = ::epoll_wait(epoll_fd_.get(), events.data(), kMaxEvents, WaitMillis(now));
    if (n < 0) {
      if (errno == EINTR) continue;
      WHARF_LOG(kError, "http {}: epoll_wait: {}; no longer serving", address_.ToString(),
                std::strerror(errno));
      return;
    }
    now = clock_.NowNs();
    for (int i = 0; i < n; ++i) {
      const uint64_t id = events[i].data.u64;
      if (id == kStopId) return;
      if (id == kListenId) {
        AcceptAll(now);
      } else if (id == kWakeId) {
        uint64_t count;
        [[maybe_unused]] const ssize_t got = ::read(wake_fd_.get(), &count, sizeof(count));
        TakeBack(now);
      } else if (auto it = conns_.find(id); it != conns_.end()) {
        Conn& conn = *it->second;
        if (conn.state == Conn::State::kWaiting) {
          ReadHead(conn, now);
        } else if (conn.state == Conn::State::kDraining) {
          Drain(conn);
        }
      }
    }
  }
}

void HttpServer::Impl::AcceptAll(TimeNs now) {
  for (int i = 0; i < kMaxAcceptsPerWake; ++i) {
    const int fd = ::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_NONBLOCK | SOCK_CLOEXEC);
    if (fd >= 0) {
      Admit(UniqueFd(fd), now);
      continue;
    }
    switch (errno) {
      case EAGAIN:
        return;
      case EINTR:
      case ECONNABORTED:
      case EPROTO:
      case ENETDOWN:
      case ENOPROTOOPT:
      case EHOSTDOWN:
      case ENONET:
      case EHOSTUNREACH:
      case ENETUNREACH:
        continue;  // that connection is gone; the next may be fine
      default:
        // EMFILE, ENFILE, ENOBUFS, ENOMEM: the connection stays in the
        // backlog, so the listener stays readable; stop watching it for a
        // while instead of spinning on it.
        WHARF_LOG_RATE_LIMITED(accept_log_, kWarn, "http {}: accept: {}; pausing accepts",
                               address_.ToString(), std::strerror(errno));
        ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, listen_fd_.get(), nullptr);
        accept_resume_ns_ = now + kAcceptPauseNs;
        return;
    }
  }
}

void HttpServer::Impl::Admit(UniqueFd fd, TimeNs now) {
  accepted_.fetch_add(1, std::memory_order_relaxed);
  if (conns_.size() >= options_.max_connections) {
    // Make room by closing the connection that has waited longest for
    // input (a closing one first); one being answered is never closed.
    Conn* victim = !draining_.empty()  ? draining_.front()
                   : !waiting_.empty() ? waiting_.front()
                                       : nullptr;
    rejected_.fetch_add(1, std::memory_order_relaxed);
    if (victim == nullptr) {
      SendBestEffort(fd.get(), response_503_);
      return;  // `fd` closes
    }
    Close(*victim);
  }
  // The library writes a response's headers and body in separate sends:
  // without this, Nagle holds the body for the client's delayed ACK (40 ms).
  const int one = 1;
  ::setsockopt(fd.get(), IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
  auto owned = std::make_unique<Conn>();
  Conn& conn = *owned;
  conn.id = next_conn_id_++;
  conn.fd = std::move(fd);
  conns_.emplace(conn.id, std::move(owned));
  open_.store(conns_.size(), std::memory_order_relaxed);
  StartWaiting(conn, now);
}

void HttpServer::Impl::StartWaiting(Conn& conn, TimeNs now) {
  conn.state = Conn::State::kWaiting;
  conn.deadline_ns = now + options_.read_timeout;
  conn.pos = waiting_.insert(waiting_.end(), &conn);
  // The request may be here already (sent with the connect, or pipelined).
  ReadHead(conn, now);
}

void HttpServer::Impl::ReadHead(Conn& conn, TimeNs now) {
  std::array<char, 4096> buffer;
  for (;;) {
    if (FindHeadEnd(conn)) {
      Dispatch(conn);
      return;
    }
    const size_t room = options_.max_request_header_bytes - conn.in.size();
    if (room == 0) {
      // No '\n' at all: the request line alone is over the limit.
      SendBestEffort(conn.fd.get(),
                     conn.in.find('\n') == std::string::npos ? response_414_ : response_431_);
      exchange_->CountRefusedHead();
      StartDraining(conn, now);
      return;
    }
    const ssize_t n =
        ::recv(conn.fd.get(), buffer.data(), std::min(room, buffer.size()), MSG_DONTWAIT);
    if (n > 0) {
      conn.in.append(buffer.data(), static_cast<size_t>(n));
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) break;
    Close(conn);  // end of input or an error: the client is gone
    return;
  }
  if (!Watch(conn)) Close(conn);
}

bool HttpServer::Impl::FindHeadEnd(Conn& conn) const {
  constexpr std::string_view kEnd = "\r\n\r\n";
  const size_t from = conn.scanned >= kEnd.size() - 1 ? conn.scanned - (kEnd.size() - 1) : 0;
  const size_t at = conn.in.find(kEnd, from);
  if (at == std::string::npos) {
    conn.scanned = conn.in.size();
    return false;
  }
  conn.head_bytes = at + kEnd.size();
  return true;
}

void HttpServer::Impl::Dispatch(Conn& conn) {
  Unwatch(conn);
  waiting_.erase(conn.pos);
  conn.state = Conn::State::kAnswering;
  {
    MutexLock lock(mu_);
    ready_.push_back(&conn);
  }
  work_cv_.NotifyOne();
}

void HttpServer::Impl::TakeBack(TimeNs now) {
  std::vector<Conn*> back;
  {
    MutexLock lock(mu_);
    back.swap(returned_);
  }
  for (Conn* conn : back) {
    if (conn->close_after) {
      StartDraining(*conn, now);
    } else {
      StartWaiting(*conn, now);
    }
  }
}

void HttpServer::Impl::StartDraining(Conn& conn, TimeNs now) {
  if (conn.state == Conn::State::kWaiting) waiting_.erase(conn.pos);
  conn.state = Conn::State::kDraining;
  conn.in = std::string();
  conn.drained_bytes = 0;
  ::shutdown(conn.fd.get(), SHUT_WR);
  conn.deadline_ns = now + drain_ns_;
  conn.pos = draining_.insert(draining_.end(), &conn);
  if (!Watch(conn)) {
    Close(conn);
    return;
  }
  Drain(conn);
}

void HttpServer::Impl::Drain(Conn& conn) {
  std::array<char, 4096> sink;
  for (;;) {
    const ssize_t n = ::recv(conn.fd.get(), sink.data(), sink.size(), MSG_DONTWAIT);
    if (n > 0) {
      conn.drained_bytes += static_cast<size_t>(n);
      if (conn.drained_bytes <= kMaxDrainBytes) continue;
    } else if (n < 0 && errno == EINTR) {
      continue;
    } else if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      return;
    }
    Close(conn);
    return;
  }
}

void HttpServer::Impl::Close(Conn& conn) {
  if (conn.state == Conn::State::kWaiting) waiting_.erase(conn.pos);
  if (conn.state == Conn::State::kDraining) draining_.erase(conn.pos);
  conns_.erase(conn.id);  // closes the socket, which leaves the epoll set with it
  open_.store(conns_.size(), std::memory_order_relaxed);
}

void HttpServer::Impl::Expire(TimeNs now) {
  while (!waiting_.empty() && waiting_.front()->deadline_ns <= now) {
    timed_out_.fetch_add(1, std::memory_order_relaxed);
    Close(*waiting_.front());
  }
  while (!draining_.empty() && draining_.front()->deadline_ns <= now) {
    Close(*draining_.front());
  }
}

// Until the next deadline (rounded up, so that the wait never ends just
// before it and turns into a spin), or for ever.
int HttpServer::Impl::WaitMillis(TimeNs now) const {
  TimeNs next = kNever;
  if (!waiting_.empty()) next = std::min(next, waiting_.front()->deadline_ns);
  if (!draining_.empty()) next = std::min(next, draining_.front()->deadline_ns);
  if (accept_resume_ns_ != 0) next = std::min(next, accept_resume_ns_);
  return next == kNever ? -1 : MillisUntil(now, next);
}

bool HttpServer::Impl::Watch(Conn& conn) {
  if (conn.in_epoll) return true;
  epoll_event event{};
  event.events = EPOLLIN;
  event.data.u64 = conn.id;
  conn.in_epoll = ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_ADD, conn.fd.get(), &event) == 0;
  return conn.in_epoll;
}

void HttpServer::Impl::Unwatch(Conn& conn) {
  if (!conn.in_epoll) return;
  ::epoll_ctl(epoll_fd_.get(), EPOLL_CTL_DEL, conn.fd.get(), nullptr);
  conn.in_epoll = false;
}

// ---- Worker threads ----

void HttpServer::Impl::WorkerLoop() {
  for (;;) {
    Conn* conn = nullptr;
    {
      MutexLock lock(mu_);
      while (!stopping_ && ready_.empty()) work_cv_.Wait(mu_);
      if (stopping_) return;
      conn = ready_.front();
      ready_.pop_front();
    }
    Answer(*conn);
    {
      MutexLock lock(mu_);
      returned_.push_back(conn);
    }
    SignalEventFd(wake_fd_.get());
  }
}

void HttpServer::Impl::Answer(Conn& conn) {
  const bool last = ++conn.requests >= kMaxRequestsPerConnection;
  conn.close_after = exchange_->Answer(
      conn.fd.get(), std::string_view(conn.in).substr(0, conn.head_bytes), last, stop_fd_.get(),
      clock_.NowNs() + options_.read_timeout);
  conn.in.erase(0, conn.head_bytes);
  conn.head_bytes = 0;
  conn.scanned = 0;
}

// ---- HttpServer ----

Result<std::unique_ptr<HttpServer>> HttpServer::Start(
    const HttpServerOptions& options, std::vector<std::pair<std::string, HttpHandler>> routes) {
  WHARF_RETURN_IF_ERROR(CheckOptions(options));
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<HttpExchange> exchange,
                         HttpExchange::Create(std::move(routes), SystemClock::Get(),
                                              options.read_timeout, kMaxRequestsPerConnection));
  auto impl = std::make_unique<Impl>(options, std::move(exchange));
  WHARF_RETURN_IF_ERROR(impl->Open());
  WHARF_RETURN_IF_ERROR(impl->Run());
  return std::unique_ptr<HttpServer>(new HttpServer(std::move(impl)));
}

HttpServer::HttpServer(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

HttpServer::~HttpServer() = default;

transport::NetAddress HttpServer::address() const { return impl_->address(); }

HttpServerCounters HttpServer::counters() const { return impl_->Counters(); }

}  // namespace wharf::mesh
