// HttpExchange: a request head through cpp-httplib's Server, which parses
// it and writes the response (status line, headers, Content-Length,
// keep-alive headers, gzip or brotli when the client asks, no body for
// HEAD) through a Stream of ours that reads only that head and writes to
// the socket with a deadline.
#include "mesh/http_exchange.h"

#include <httplib.h>
#include <netdb.h>
#include <poll.h>
#include <signal.h>
#include <sys/socket.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <unordered_set>

#include "base/log.h"
#include "base/mutex.h"

namespace wharf::mesh {
namespace {

constexpr std::string_view kPlainText = "text/plain; charset=utf-8";

int MillisUntil(TimeNs now, TimeNs deadline) {
  if (deadline <= now) return 0;
  return static_cast<int>(std::min<TimeNs>((deadline - now + kNsPerMs - 1) / kNsPerMs, INT32_MAX));
}

// What cpp-httplib's callbacks learn about the request a worker answers:
// they run on that worker, inside process_request.
struct RequestScope {
  bool routed = false;  // the pre-routing handler ran: the library parsed the head
  bool close = false;   // close the connection after this response
};
thread_local RequestScope* t_request = nullptr;

// cpp-httplib's Server used only to parse a head and write its response.
// process_request (protected in Server) takes any Stream, which is how the
// library works without its own sockets and threads.
class HttplibAdapter final : public httplib::Server {
 public:
  using httplib::Server::process_request;
};

// Server's constructor ignores SIGPIPE for the whole process; a library must
// not own signals, so the disposition the process had is put back.
std::unique_ptr<HttplibAdapter> NewHttplibAdapter() {
  struct sigaction before {};
  ::sigaction(SIGPIPE, nullptr, &before);
  auto adapter = std::make_unique<HttplibAdapter>();
  ::sigaction(SIGPIPE, &before, nullptr);
  return adapter;
}

void SocketName(int fd, bool peer, std::string& ip, int& port) {
  sockaddr_storage addr{};
  socklen_t len = sizeof(addr);
  auto* sa = reinterpret_cast<sockaddr*>(&addr);
  if ((peer ? ::getpeername(fd, sa, &len) : ::getsockname(fd, sa, &len)) != 0) return;
  std::array<char, NI_MAXHOST> host{};
  std::array<char, NI_MAXSERV> service{};
  if (::getnameinfo(sa, len, host.data(), host.size(), service.data(), service.size(),
                    NI_NUMERICHOST | NI_NUMERICSERV) == 0) {
    ip = host.data();
    port = std::atoi(service.data());
  }
}

// The Stream the library reads one request head from and writes its
// response to. Reads see exactly the head (then end of input): the library
// never waits for a client and never buffers more than the poller did.
// Writes wait for the socket until `deadline_ns`, or until the server stops.
class HeadStream final : public httplib::Stream {
 public:
  HeadStream(int fd, std::string_view head, int stop_fd, const Clock& clock, TimeNs deadline_ns)
      : fd_(fd), head_(head), stop_fd_(stop_fd), clock_(clock), deadline_ns_(deadline_ns) {}

  bool is_readable() const override { return offset_ < head_.size(); }
  bool is_writable() const override { return !failed_; }
  ssize_t read(char* ptr, size_t size) override {
    const size_t n = std::min(size, head_.size() - offset_);
    std::memcpy(ptr, head_.data() + offset_, n);
    offset_ += n;
    return static_cast<ssize_t>(n);
  }
  ssize_t write(const char* ptr, size_t size) override {
    while (!failed_) {
      const ssize_t n = ::send(fd_, ptr, size, MSG_NOSIGNAL | MSG_DONTWAIT);
      if (n >= 0) return n;
      if (errno == EINTR) continue;
      if (errno != EAGAIN && errno != EWOULDBLOCK) break;
      const TimeNs now = clock_.NowNs();
      if (now >= deadline_ns_) break;
      std::array<pollfd, 2> fds{{{fd_, POLLOUT, 0}, {stop_fd_, POLLIN, 0}}};
      if (::poll(fds.data(), fds.size(), MillisUntil(now, deadline_ns_)) < 0 && errno != EINTR) {
        break;
      }
      if (fds[1].revents != 0) break;  // the server is stopping
    }
    failed_ = true;
    return -1;
  }
  void get_remote_ip_and_port(std::string& ip, int& port) const override {
    SocketName(fd_, /*peer=*/true, ip, port);
  }
  void get_local_ip_and_port(std::string& ip, int& port) const override {
    SocketName(fd_, /*peer=*/false, ip, port);
  }
  int socket() const override { return fd_; }  // socket_t is int on Linux

  // A write failed or timed out: the response is incomplete.
  bool failed() const { return failed_; }

 private:
  const int fd_;
  const std::string_view head_;
  size_t offset_ = 0;
  const int stop_fd_;
  const Clock& clock_;
  const TimeNs deadline_ns_;
  bool failed_ = false;
};

struct Route {
  std::string path;
  bool prefix = false;  // path ends in '/': matches every path under it
  HttpHandler handler;
};

Result<std::vector<Route>> MakeRoutes(std::vector<std::pair<std::string, HttpHandler>> given) {
  std::vector<Route> routes;
  std::unordered_set<std::string> seen;
  for (auto& [path, handler] : given) {
    const bool printable = std::all_of(path.begin(), path.end(), [](char c) {
      return static_cast<unsigned char>(c) > ' ' && c != 0x7f;
    });
    if (path.empty() || path[0] != '/' || !printable) {
      return InvalidArgumentError("http.route \"" + path +
                                  "\": must start with '/' and hold no spaces or control bytes");
    }
    if (!handler) return InvalidArgumentError("http.route " + path + ": no handler");
    if (!seen.insert(path).second) {
      return InvalidArgumentError("http.route " + path + ": given twice");
    }
    const bool prefix = path.back() == '/';
    routes.push_back({std::move(path), prefix, std::move(handler)});
  }
  std::sort(routes.begin(), routes.end(),
            [](const Route& a, const Route& b) { return a.path < b.path; });
  return routes;
}

std::string NotFoundBody(const std::vector<Route>& routes) {
  std::string body = "not found; routes (one ending in / serves every path under it):\n";
  for (const Route& route : routes) body += route.path + "\n";
  return body;
}

}  // namespace

class HttpExchange::Impl {
 public:
  Impl(std::vector<Route> routes, const Clock& clock, DurationNs keep_alive_timeout_ns,
       size_t max_requests_per_connection);

  void set_name(std::string name) { name_ = std::move(name); }
  bool Answer(int fd, std::string_view head, bool last, int stop_fd, TimeNs deadline_ns);
  void CountRefusedHead() {
    requests_.fetch_add(1, std::memory_order_relaxed);
    bad_requests_.fetch_add(1, std::memory_order_relaxed);
  }
  Counts counts() const;

 private:
  // cpp-httplib's callbacks, on the worker answering.
  httplib::Server::HandlerResponse Respond(const httplib::Request& req, httplib::Response& res)
      ABSL_LOCKS_EXCLUDED(log_mu_);
  static void BeforeWriting(httplib::Response& res);
  void Logged(const httplib::Response& res);
  const Route* FindRoute(const std::string& path) const;

  const std::vector<Route> routes_;
  const std::string not_found_body_;  // lists routes_
  const Clock& clock_;
  const std::unique_ptr<HttplibAdapter> httplib_;
  std::string name_ = "http";

  Mutex log_mu_;
  RateLimitedLogger handler_log_ ABSL_GUARDED_BY(log_mu_);

  std::atomic<uint64_t> requests_{0};
  std::atomic<uint64_t> not_found_{0};
  std::atomic<uint64_t> bad_requests_{0};
  std::atomic<uint64_t> handler_errors_{0};
};

HttpExchange::Impl::Impl(std::vector<Route> routes, const Clock& clock,
                         DurationNs keep_alive_timeout_ns, size_t max_requests_per_connection)
    : routes_(std::move(routes)),
      not_found_body_(NotFoundBody(routes_)),
      clock_(clock),
      httplib_(NewHttplibAdapter()),
      handler_log_(clock_, 10 * kNsPerSec) {
  httplib_->set_pre_routing_handler(
      [this](const httplib::Request& req, httplib::Response& res) { return Respond(req, res); });
  httplib_->set_post_routing_handler(
      [](const httplib::Request&, httplib::Response& res) { BeforeWriting(res); });
  httplib_->set_logger(
      [this](const httplib::Request&, const httplib::Response& res) { Logged(res); });
  // A short body for the library's own error answers (ours have one).
  httplib_->set_error_handler(
      httplib::Server::HandlerWithResponse([](const httplib::Request&, httplib::Response& res) {
        if (!res.body.empty()) return httplib::Server::HandlerResponse::Unhandled;
        res.set_content(res.status == 414 ? "request line too long\n" : "malformed request\n",
                        std::string(kPlainText));
        return httplib::Server::HandlerResponse::Handled;
      }));
  // Only what the Keep-Alive header says: the server enforces both.
  httplib_->set_keep_alive_max_count(max_requests_per_connection);
  httplib_->set_keep_alive_timeout(static_cast<time_t>(keep_alive_timeout_ns / kNsPerSec));
  // Never reached (Respond answers every request with a body 413 before the
  // library would read it); zero in case it ever is.
  httplib_->set_payload_max_length(0);
}

bool HttpExchange::Impl::Answer(int fd, std::string_view head, bool last, int stop_fd,
                                TimeNs deadline_ns) {
  RequestScope scope;
  t_request = &scope;
  HeadStream stream(fd, head, stop_fd, clock_, deadline_ns);
  bool client_closes = false;
  bool written = false;
  try {
    written = httplib_->process_request(stream, last, client_closes, nullptr);
  } catch (...) {
    // Out of memory in the library, say: this connection ends, the server
    // goes on. (Handlers' exceptions are caught in Respond.)
  }
  t_request = nullptr;
  return !written || stream.failed() || last || client_closes || scope.close;
}

HttpExchange::Counts HttpExchange::Impl::counts() const {
  constexpr auto kRelaxed = std::memory_order_relaxed;
  return {.requests = requests_.load(kRelaxed),
          .not_found = not_found_.load(kRelaxed),
          .bad_requests = bad_requests_.load(kRelaxed),
          .handler_errors = handler_errors_.load(kRelaxed)};
}

httplib::Server::HandlerResponse HttpExchange::Impl::Respond(const httplib::Request& req,
                                                           httplib::Response& res) {
  constexpr auto kHandled = httplib::Server::HandlerResponse::Handled;
  RequestScope* scope = t_request;
  if (scope != nullptr) scope->routed = true;
  auto refuse = [&](int status, const char* body) {
    res.status = status;
    res.set_content(body, std::string(kPlainText));
    bad_requests_.fetch_add(1, std::memory_order_relaxed);
    // Whatever the client sent after the head (a body) was not read.
    if (scope != nullptr) scope->close = true;
    return kHandled;
  };
  if (req.method != "GET" && req.method != "HEAD") {
    res.set_header("Allow", "GET, HEAD");
    return refuse(405, "method not allowed: this server answers GET and HEAD only\n");
  }
  const std::string content_length = req.get_header_value("Content-Length");
  if ((!content_length.empty() && content_length != "0") || req.has_header("Transfer-Encoding")) {
    return refuse(413, "request bodies are not accepted\n");
  }
  const Route* route = FindRoute(req.path);
  if (route == nullptr) {
    not_found_.fetch_add(1, std::memory_order_relaxed);
    res.status = 404;
    res.set_content(not_found_body_, std::string(kPlainText));
    return kHandled;
  }

  const HttpRequest request{req.method, req.path, {req.params.begin(), req.params.end()}};
  HttpResponse response;
  std::string error;
  try {
    response = route->handler(request);
    if (response.status < 200 || response.status > 599) {
      error = "gave status " + std::to_string(response.status);
    }
  } catch (const std::exception& e) {
    error = std::string("threw: ") + e.what();
  } catch (...) {
    error = "threw a non-std::exception";
  }
  if (!error.empty()) {
    handler_errors_.fetch_add(1, std::memory_order_relaxed);
    {
      MutexLock lock(log_mu_);
      WHARF_LOG_RATE_LIMITED(handler_log_, kWarn, "{}: handler for {} {}", name_,
                             route->path, error);
    }
    res.status = 500;
    res.set_content("internal error in the handler\n", std::string(kPlainText));
    return kHandled;
  }
  res.status = response.status;
  res.body = std::move(response.body);
  res.set_header("Content-Type", response.content_type);  // dropped if it holds CR or LF
  return kHandled;
}

// Every response, its headers made, just before they are written.
void HttpExchange::Impl::BeforeWriting(httplib::Response& res) {
  RequestScope* scope = t_request;
  if (scope == nullptr) return;
  // An error before routing: the library refused the head.
  if (!scope->routed && res.status >= 400) scope->close = true;
  if (scope->close) {
    res.headers.erase("Keep-Alive");
    res.headers.erase("Connection");
    res.set_header("Connection", "close");
  }
}

// Every response, once written.
void HttpExchange::Impl::Logged(const httplib::Response& res) {
  requests_.fetch_add(1, std::memory_order_relaxed);
  RequestScope* scope = t_request;
  if (scope != nullptr && !scope->routed && res.status >= 400) {
    bad_requests_.fetch_add(1, std::memory_order_relaxed);
  }
}

const Route* HttpExchange::Impl::FindRoute(const std::string& path) const {
  const Route* best = nullptr;
  for (const Route& route : routes_) {
    if (route.path == path) return &route;
    if (route.prefix && path.starts_with(route.path) &&
        (best == nullptr || route.path.size() > best->path.size())) {
      best = &route;
    }
  }
  return best;
}

// ---- HttpExchange ----

Result<std::unique_ptr<HttpExchange>> HttpExchange::Create(
    std::vector<std::pair<std::string, HttpHandler>> routes, const Clock& clock,
    DurationNs keep_alive_timeout_ns, size_t max_requests_per_connection) {
  WHARF_ASSIGN_OR_RETURN(std::vector<Route> table, MakeRoutes(std::move(routes)));
  return std::unique_ptr<HttpExchange>(new HttpExchange(std::make_unique<Impl>(
      std::move(table), clock, keep_alive_timeout_ns, max_requests_per_connection)));
}

HttpExchange::HttpExchange(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
HttpExchange::~HttpExchange() = default;

void HttpExchange::set_name(std::string name) { impl_->set_name(std::move(name)); }

bool HttpExchange::Answer(int fd, std::string_view head, bool last, int stop_fd,
                          TimeNs deadline_ns) {
  return impl_->Answer(fd, head, last, stop_fd, deadline_ns);
}

void HttpExchange::CountRefusedHead() { impl_->CountRefusedHead(); }

HttpExchange::Counts HttpExchange::counts() const { return impl_->counts(); }

// ---- the handlers' helpers (http_message.h) ----

std::string_view QueryValue(const HttpRequest& request, std::string_view name) {
  for (const auto& [key, value] : request.query) {
    if (key == name) return value;
  }
  return {};
}

HttpResponse TextResponse(int status, std::string message) {
  return HttpResponse{.status = status, .body = std::move(message) + "\n"};
}

HttpResponse JsonResponse(std::string body) {
  return HttpResponse{.status = 200, .content_type = "application/json", .body = std::move(body)};
}

}  // namespace wharf::mesh
