// http_server_test.cc: HttpServer over real sockets on 127.0.0.1, driven by
// a small raw-socket HTTP client (RawClient) so that every byte on the wire
// is the test's: routes, errors, limits, timeouts, floods and shutdown.
#include "mesh/http_server.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "base/log.h"
#include "base/mutex.h"
#include "base/sanitizer_build.h"
#include "base/unique_fd.h"

namespace wharf::mesh {
namespace {

using namespace std::chrono_literals;
using SteadyClock = std::chrono::steady_clock;
using Routes = std::vector<std::pair<std::string, HttpHandler>>;

constexpr std::chrono::milliseconds kWait = 5s;

HttpServerOptions LoopbackOptions() {
  HttpServerOptions options;
  options.listen = transport::NetAddress::Ipv4(0x7f000001, 0);
  return options;
}

HttpResponse Text(std::string body) {
  HttpResponse response;
  response.body = std::move(body);
  return response;
}

std::unique_ptr<HttpServer> StartServer(const HttpServerOptions& options, Routes routes) {
  auto server = HttpServer::Start(options, std::move(routes));
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? std::move(server).value() : nullptr;
}

std::string Request(std::string_view method, std::string_view target, bool close = false) {
  std::string request = std::string(method) + " " + std::string(target) + " HTTP/1.1\r\n";
  request += "Host: test\r\n";
  if (close) request += "Connection: close\r\n";
  return request + "\r\n";
}

int MillisLeft(SteadyClock::time_point deadline) {
  const auto left =
      std::chrono::duration_cast<std::chrono::milliseconds>(deadline - SteadyClock::now());
  return left.count() <= 0 ? 0 : static_cast<int>(left.count()) + 1;
}

// Tries `condition` until it holds or `timeout` passes, a millisecond apart.
bool Eventually(const std::function<bool()>& condition, std::chrono::milliseconds timeout = kWait) {
  const auto deadline = SteadyClock::now() + timeout;
  while (!condition()) {
    if (SteadyClock::now() >= deadline) return false;
    std::this_thread::sleep_for(1ms);
  }
  return true;
}

int ThreadCount() {
  int count = 0;
  for ([[maybe_unused]] const auto& entry :
       std::filesystem::directory_iterator("/proc/self/task")) {
    ++count;
  }
  return count;
}

std::chrono::microseconds CpuTime() {
  rusage usage{};
  getrusage(RUSAGE_SELF, &usage);
  auto micros = [](const timeval& t) {
    return std::chrono::seconds(t.tv_sec) + std::chrono::microseconds(t.tv_usec);
  };
  return micros(usage.ru_utime) + micros(usage.ru_stime);
}

struct Reply {
  int status = 0;
  std::map<std::string, std::string> headers;  // names lower-cased
  std::string body;

  std::string Header(const std::string& name) const {
    auto it = headers.find(name);
    return it == headers.end() ? std::string() : it->second;
  }
};

// One TCP connection to the server: connects blocking, then sends and
// receives without blocking, every wait bounded by a deadline.
class RawClient {
 public:
  enum class When { kNow, kLater };

  // `receive_buffer` > 0 sets SO_RCVBUF before connecting (a client that
  // takes a response slowly). kLater makes the socket only: Connect() then.
  explicit RawClient(const transport::NetAddress& server, int receive_buffer = 0,
                     When connect = When::kNow)
      : server_(server),
        fd_(::socket(server.is_v4() ? AF_INET : AF_INET6, SOCK_STREAM | SOCK_CLOEXEC, 0)) {
    if (receive_buffer > 0) {
      setsockopt(fd_.get(), SOL_SOCKET, SO_RCVBUF, &receive_buffer, sizeof(receive_buffer));
    }
    if (connect == When::kNow) Connect();
  }

  bool Connect() {
    sockaddr_storage addr{};
    const auto len = static_cast<socklen_t>(server_.ToSockaddr(&addr));
    connected_ = ::connect(fd_.get(), reinterpret_cast<sockaddr*>(&addr), len) == 0;
    fcntl(fd_.get(), F_SETFL, O_NONBLOCK);
    return connected_;
  }

  bool connected() const { return connected_; }

  // Sends every byte; false if the connection failed or `timeout` passed.
  bool Send(std::string_view bytes, std::chrono::milliseconds timeout = kWait) {
    const auto deadline = SteadyClock::now() + timeout;
    while (!bytes.empty()) {
      const ssize_t n = ::send(fd_.get(), bytes.data(), bytes.size(), MSG_NOSIGNAL);
      if (n > 0) {
        bytes.remove_prefix(static_cast<size_t>(n));
        continue;
      }
      if (n < 0 && errno == EINTR) continue;
      if (n < 0 && errno != EAGAIN) return false;
      pollfd p{fd_.get(), POLLOUT, 0};
      if (::poll(&p, 1, MillisLeft(deadline)) == 0) return false;
    }
    return true;
  }

  // One response: status line, headers, then Content-Length bytes (none
  // for a HEAD). Nothing if the connection ended or `timeout` passed first.
  std::optional<Reply> Read(bool head_request = false, std::chrono::milliseconds timeout = kWait) {
    const auto deadline = SteadyClock::now() + timeout;
    size_t end;
    while ((end = input_.find("\r\n\r\n")) == std::string::npos) {
      if (!Fill(deadline)) return std::nullopt;
    }
    Reply reply;
    const std::string head = input_.substr(0, end + 2);
    input_.erase(0, end + 4);
    size_t line_end = head.find("\r\n");
    const std::string status_line = head.substr(0, line_end);
    if (status_line.size() < 12 || status_line.compare(0, 9, "HTTP/1.1 ") != 0) return std::nullopt;
    reply.status = std::stoi(status_line.substr(9, 3));
    for (size_t at = line_end + 2; at < head.size(); at = line_end + 2) {
      line_end = head.find("\r\n", at);
      const std::string line = head.substr(at, line_end - at);
      const size_t colon = line.find(':');
      if (colon == std::string::npos) return std::nullopt;
      std::string name = line.substr(0, colon);
      std::transform(name.begin(), name.end(), name.begin(),
                     [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
      reply.headers[name] = line.substr(line.find_first_not_of(' ', colon + 1));
    }
    const std::string length = reply.Header("content-length");
    const size_t body_bytes = head_request || length.empty() ? 0 : std::stoul(length);
    while (input_.size() < body_bytes) {
      if (!Fill(deadline)) return std::nullopt;
    }
    reply.body = input_.substr(0, body_bytes);
    input_.erase(0, body_bytes);
    return reply;
  }

  // True once the server has closed the connection (end of input or a
  // reset) within `timeout`; anything still arriving is discarded.
  bool WaitClosed(std::chrono::milliseconds timeout = kWait) {
    const auto deadline = SteadyClock::now() + timeout;
    while (Fill(deadline)) input_.clear();
    return closed_;
  }

  // True once some input is waiting (not read).
  bool WaitReadable(std::chrono::milliseconds timeout = kWait) {
    pollfd p{fd_.get(), POLLIN, 0};
    return ::poll(&p, 1, static_cast<int>(timeout.count())) == 1;
  }

 private:
  // Appends what arrives next; false at end of input, on a reset, or at the
  // deadline.
  bool Fill(SteadyClock::time_point deadline) {
    std::array<char, 65536> chunk;
    for (;;) {
      const ssize_t n = ::recv(fd_.get(), chunk.data(), chunk.size(), 0);
      if (n > 0) {
        input_.append(chunk.data(), static_cast<size_t>(n));
        return true;
      }
      if (n == 0 || (errno != EAGAIN && errno != EINTR)) {
        closed_ = true;
        return false;
      }
      pollfd p{fd_.get(), POLLIN, 0};
      if (::poll(&p, 1, MillisLeft(deadline)) == 0) return false;
    }
  }

  const transport::NetAddress server_;
  UniqueFd fd_;
  bool connected_ = false;
  bool closed_ = false;
  std::string input_;  // received, not yet returned by Read
};

// A GET on a connection of its own, closed after the answer.
std::optional<Reply> Fetch(const transport::NetAddress& server, std::string_view target) {
  RawClient client(server);
  if (!client.connected() || !client.Send(Request("GET", target, /*close=*/true))) {
    return std::nullopt;
  }
  return client.Read();
}

// Holds handlers until opened; counts those that arrived.
class Gate {
 public:
  void Pass() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    ++entered_;
    cv_.NotifyAll();
    while (!open_) cv_.Wait(mu_);
  }
  void Open() ABSL_LOCKS_EXCLUDED(mu_) {
    MutexLock lock(mu_);
    open_ = true;
    cv_.NotifyAll();
  }
  bool WaitEntered(int count, std::chrono::milliseconds timeout = kWait) ABSL_LOCKS_EXCLUDED(mu_) {
    const auto deadline = CondVar::Clock::now() + timeout;
    MutexLock lock(mu_);
    while (entered_ < count) {
      if (!cv_.WaitUntil(mu_, deadline) && entered_ < count) return false;
    }
    return true;
  }

 private:
  Mutex mu_;
  CondVar cv_;
  bool open_ ABSL_GUARDED_BY(mu_) = false;
  int entered_ ABSL_GUARDED_BY(mu_) = 0;
};

// Opens the gate when the test ends, before the server (declared earlier)
// is destroyed and joins the handlers waiting at it.
struct OpenOnExit {
  Gate& gate;
  ~OpenOnExit() { gate.Open(); }
};

// Raises RLIMIT_NOFILE's soft limit to `wanted` for its lifetime.
class ScopedFdLimit {
 public:
  explicit ScopedFdLimit(rlim_t wanted) {
    getrlimit(RLIMIT_NOFILE, &saved_);
    if (saved_.rlim_cur >= wanted) {
      ok_ = true;
      return;
    }
    if (saved_.rlim_max != RLIM_INFINITY && saved_.rlim_max < wanted) return;
    rlimit raised = saved_;
    raised.rlim_cur = wanted;
    ok_ = changed_ = setrlimit(RLIMIT_NOFILE, &raised) == 0;
  }
  ~ScopedFdLimit() {
    if (changed_) setrlimit(RLIMIT_NOFILE, &saved_);
  }
  bool ok() const { return ok_; }
  rlim_t hard() const { return saved_.rlim_max; }

 private:
  rlimit saved_{};
  bool ok_ = false;
  bool changed_ = false;
};

TEST(HttpServerTest, ARouteAnswersWithItsStatusContentTypeAndBody) {
  auto server = StartServer(LoopbackOptions(),
                            {{"/metrics",
                              [](const HttpRequest&) {
                                HttpResponse r = Text("wharf_up 1\n");
                                r.content_type = "text/plain; version=0.0.4; charset=utf-8";
                                return r;
                              }},
                             {"/api/v1/made", [](const HttpRequest&) {
                                return HttpResponse{201, "application/json", R"({"made":true})"};
                              }}});
  ASSERT_TRUE(server);

  auto metrics = Fetch(server->address(), "/metrics");
  ASSERT_TRUE(metrics);
  EXPECT_EQ(metrics->status, 200);
  EXPECT_EQ(metrics->Header("content-type"), "text/plain; version=0.0.4; charset=utf-8");
  EXPECT_EQ(metrics->Header("content-length"), "11");
  EXPECT_EQ(metrics->body, "wharf_up 1\n");

  auto made = Fetch(server->address(), "/api/v1/made");
  ASSERT_TRUE(made);
  EXPECT_EQ(made->status, 201);
  EXPECT_EQ(made->Header("content-type"), "application/json");
  EXPECT_EQ(made->body, R"({"made":true})");
  EXPECT_TRUE(Eventually([&] { return server->counters().requests == 2; }));
}

TEST(HttpServerTest, HeadGetsTheHeadersWithoutTheBodyAndTheConnectionStaysUsable) {
  auto server = StartServer(LoopbackOptions(), {{"/metrics", [](const HttpRequest& request) {
                                                   return Text("method " + request.method + "\n");
                                                 }}});
  ASSERT_TRUE(server);
  RawClient client(server->address());
  ASSERT_TRUE(client.Send(Request("HEAD", "/metrics")));
  auto head = client.Read(/*head_request=*/true);
  ASSERT_TRUE(head);
  EXPECT_EQ(head->status, 200);
  EXPECT_EQ(head->Header("content-length"), "12");  // "method HEAD\n"
  // Had the body been sent, this would read it as the next status line.
  ASSERT_TRUE(client.Send(Request("GET", "/metrics")));
  auto get = client.Read();
  ASSERT_TRUE(get);
  EXPECT_EQ(get->status, 200);
  EXPECT_EQ(get->body, "method GET\n");
}

TEST(HttpServerTest, KeepAliveAndPipelinedRequestsAreAnsweredInOrder) {
  auto server =
      StartServer(LoopbackOptions(), {{"/a", [](const HttpRequest&) { return Text("first"); }},
                                      {"/b", [](const HttpRequest&) { return Text("second"); }}});
  ASSERT_TRUE(server);
  RawClient client(server->address());
  ASSERT_TRUE(client.Send(Request("GET", "/a") + Request("GET", "/b")));
  auto first = client.Read();
  auto second = client.Read();
  ASSERT_TRUE(first && second);
  EXPECT_EQ(first->body, "first");
  EXPECT_EQ(second->body, "second");
  ASSERT_TRUE(client.Send(Request("GET", "/a")));
  auto third = client.Read();
  ASSERT_TRUE(third);
  EXPECT_EQ(third->body, "first");
  EXPECT_EQ(server->counters().accepted_connections, 1u);
}

TEST(HttpServerTest, APrefixRouteGetsEveryPathUnderItWithTheQueryDecoded) {
  auto echo = [](const HttpRequest& request) {
    std::string body = "prefix " + request.path;
    for (const auto& [name, value] : request.query) body += " " + name + "=" + value;
    return Text(body);
  };
  auto server = StartServer(
      LoopbackOptions(),
      {{"/api/v1/", echo}, {"/api/v1/exact", [](const HttpRequest&) { return Text("exact"); }}});
  ASSERT_TRUE(server);

  auto prefixed = Fetch(server->address(), "/api/v1/targets?b=2&a=x%20y&a=z");
  ASSERT_TRUE(prefixed);
  EXPECT_EQ(prefixed->status, 200);
  EXPECT_EQ(prefixed->body, "prefix /api/v1/targets a=x y a=z b=2");
  auto exact = Fetch(server->address(), "/api/v1/exact");
  ASSERT_TRUE(exact);
  EXPECT_EQ(exact->body, "exact");
  auto itself = Fetch(server->address(), "/api/v1/");
  ASSERT_TRUE(itself);
  EXPECT_EQ(itself->body, "prefix /api/v1/");
  auto outside = Fetch(server->address(), "/api/v1");
  ASSERT_TRUE(outside);
  EXPECT_EQ(outside->status, 404);
}

TEST(HttpServerTest, AnUnknownPathGets404ListingTheRoutes) {
  auto ok = [](const HttpRequest&) { return Text("ok"); };
  auto server = StartServer(LoopbackOptions(), {{"/metrics", ok}, {"/api/v1/", ok}});
  ASSERT_TRUE(server);
  auto reply = Fetch(server->address(), "/nope");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 404);
  EXPECT_EQ(reply->Header("content-type"), "text/plain; charset=utf-8");
  EXPECT_NE(reply->body.find("/api/v1/\n/metrics\n"), std::string::npos) << reply->body;
  EXPECT_LT(reply->body.size(), 200u);
  EXPECT_EQ(server->counters().not_found, 1u);
}

TEST(HttpServerTest, PostGets405AndTheConnectionIsClosed) {
  std::atomic<int> calls{0};
  auto server = StartServer(LoopbackOptions(), {{"/metrics", [&](const HttpRequest&) {
                                                   ++calls;
                                                   return Text("ok");
                                                 }}});
  ASSERT_TRUE(server);
  RawClient client(server->address());
  ASSERT_TRUE(
      client.Send("POST /metrics HTTP/1.1\r\nHost: test\r\nContent-Length: 11\r\n\r\n"
                  "hello=world"));
  auto reply = client.Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 405);
  EXPECT_EQ(reply->Header("allow"), "GET, HEAD");
  EXPECT_EQ(reply->Header("connection"), "close");
  EXPECT_TRUE(client.WaitClosed());
  EXPECT_EQ(calls, 0);
  EXPECT_EQ(server->counters().bad_requests, 1u);
}

TEST(HttpServerTest, AGetWithABodyGets413AndTheConnectionIsClosed) {
  auto server =
      StartServer(LoopbackOptions(), {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);
  RawClient client(server->address());
  ASSERT_TRUE(client.Send("GET /metrics HTTP/1.1\r\nHost: test\r\nContent-Length: 5\r\n\r\nhello"));
  auto reply = client.Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 413);
  EXPECT_TRUE(client.WaitClosed());
}

// The poller's limit: a head over max_request_header_bytes is answered
// without being read further.
TEST(HttpServerTest, AHundredKilobyteHeaderLineGets431AndOthersAreStillAnswered) {
  auto server =
      StartServer(LoopbackOptions(), {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);
  RawClient bystander(server->address());  // open before and after

  RawClient client(server->address());
  ASSERT_TRUE(
      client.Send("GET /metrics HTTP/1.1\r\nX-Big: " + std::string(100 * 1024, 'a') + "\r\n\r\n"));
  auto reply = client.Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 431);
  EXPECT_TRUE(client.WaitClosed());

  ASSERT_TRUE(bystander.Send(Request("GET", "/metrics")));
  auto other = bystander.Read();
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
  EXPECT_EQ(server->counters().bad_requests, 1u);
}

TEST(HttpServerTest, AHundredKilobytePathGets414AndOthersAreStillAnswered) {
  auto server =
      StartServer(LoopbackOptions(), {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);
  RawClient client(server->address());
  ASSERT_TRUE(client.Send(Request("GET", "/" + std::string(100 * 1024, 'p'))));
  auto reply = client.Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 414);
  EXPECT_TRUE(client.WaitClosed());

  auto other = Fetch(server->address(), "/metrics");
  ASSERT_TRUE(other);
  EXPECT_EQ(other->status, 200);
  EXPECT_EQ(server->counters().bad_requests, 1u);
}

// cpp-httplib's own limits (compiled into the .so at 8192 bytes per line)
// answer when ours is raised past them; the connection is closed after.
TEST(HttpServerTest, WithTheHeadLimitRaisedTheLibrarysLineLimitsAnswer) {
  HttpServerOptions options = LoopbackOptions();
  options.max_request_header_bytes = 64 * 1024;
  auto server = StartServer(options, {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);

  RawClient long_header(server->address());
  ASSERT_TRUE(
      long_header.Send("GET /metrics HTTP/1.1\r\nX-Big: " + std::string(10000, 'a') + "\r\n\r\n"));
  auto reply = long_header.Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 400);
  EXPECT_TRUE(long_header.WaitClosed());

  RawClient long_path(server->address());
  ASSERT_TRUE(long_path.Send(Request("GET", "/" + std::string(10000, 'p'))));
  reply = long_path.Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 414);
  EXPECT_TRUE(long_path.WaitClosed());

  RawClient garbage(server->address());
  ASSERT_TRUE(garbage.Send("BREW /pot HTCPCP/1.0\r\n\r\n"));
  reply = garbage.Read();
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 400);
  EXPECT_TRUE(garbage.WaitClosed());

  auto fine = Fetch(server->address(), "/metrics");
  ASSERT_TRUE(fine);
  EXPECT_EQ(fine->status, 200);
  EXPECT_EQ(server->counters().bad_requests, 3u);
}

TEST(HttpServerTest, AThrowingHandlerGets500AndTheNextRequestIsAnswered) {
  auto server = StartServer(
      LoopbackOptions(),
      {{"/boom", [](const HttpRequest&) -> HttpResponse { throw std::runtime_error("kaput"); }},
       {"/odd",
        [](const HttpRequest&) {
          return HttpResponse{42, "text/plain", "?"};
        }},
       {"/ok", [](const HttpRequest&) { return Text("fine"); }}});
  ASSERT_TRUE(server);
  RawClient client(server->address());
  ASSERT_TRUE(client.Send(Request("GET", "/boom")));
  auto boom = client.Read();
  ASSERT_TRUE(boom);
  EXPECT_EQ(boom->status, 500);
  EXPECT_LT(boom->body.size(), 100u);
  EXPECT_EQ(boom->body.find("kaput"), std::string::npos);  // not shown to clients

  ASSERT_TRUE(client.Send(Request("GET", "/odd")));
  auto odd = client.Read();
  ASSERT_TRUE(odd);
  EXPECT_EQ(odd->status, 500);

  ASSERT_TRUE(client.Send(Request("GET", "/ok")));  // same connection
  auto ok = client.Read();
  ASSERT_TRUE(ok);
  EXPECT_EQ(ok->status, 200);
  EXPECT_EQ(ok->body, "fine");
  EXPECT_EQ(server->counters().handler_errors, 2u);
}

TEST(HttpServerTest, IdleConnectionsAreClosedAfterTheReadTimeoutWithoutSpinning) {
  HttpServerOptions options = LoopbackOptions();
  options.read_timeout = 300 * kNsPerMs;
  auto server = StartServer(options, {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);

  const auto start = SteadyClock::now();
  const auto cpu_before = CpuTime();
  RawClient silent(server->address());     // sends nothing
  RawClient trickling(server->address());  // half a head, then nothing
  ASSERT_TRUE(trickling.Send("GET /metrics HT"));
  RawClient kept_alive(server->address());  // one request, then idle
  ASSERT_TRUE(kept_alive.Send(Request("GET", "/metrics")));
  ASSERT_TRUE(kept_alive.Read());

  EXPECT_TRUE(silent.WaitClosed(3s));
  EXPECT_TRUE(trickling.WaitClosed(3s));
  EXPECT_TRUE(kept_alive.WaitClosed(3s));
  const auto elapsed = SteadyClock::now() - start;
  const auto cpu = CpuTime() - cpu_before;
  EXPECT_GE(elapsed, 250ms);
  EXPECT_LT(elapsed, 2s);
  // The whole process (server threads and this client, all waiting in the
  // kernel) used a fraction of the time it waited.
  EXPECT_LT(cpu, 100ms) << "cpu " << cpu.count() << " us in "
                        << std::chrono::duration_cast<std::chrono::milliseconds>(elapsed).count()
                        << " ms";
  EXPECT_EQ(server->counters().timed_out_connections, 3u);
  EXPECT_TRUE(Eventually([&] { return server->counters().open_connections == 0; }));
}

TEST(HttpServerTest, PastMaxConnectionsTheLongestIdleConnectionMakesRoom) {
  HttpServerOptions options = LoopbackOptions();
  options.max_connections = 2;
  auto server = StartServer(options, {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);
  RawClient oldest(server->address());
  ASSERT_TRUE(Eventually([&] { return server->counters().open_connections == 1; }));
  RawClient newer(server->address());
  ASSERT_TRUE(Eventually([&] { return server->counters().open_connections == 2; }));

  auto reply = Fetch(server->address(), "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_TRUE(oldest.WaitClosed());
  ASSERT_TRUE(newer.Send(Request("GET", "/metrics")));
  auto still = newer.Read();
  ASSERT_TRUE(still);
  EXPECT_EQ(still->status, 200);
  EXPECT_EQ(server->counters().rejected_connections, 1u);
}

TEST(HttpServerTest, WhenEveryConnectionIsBeingAnsweredANewcomerGets503) {
  Gate gate;
  HttpServerOptions options = LoopbackOptions();
  options.max_connections = 2;
  options.threads = 2;
  auto server = StartServer(options, {{"/wait", [&](const HttpRequest&) {
                                         gate.Pass();
                                         return Text("done");
                                       }}});
  ASSERT_TRUE(server);
  OpenOnExit open_on_exit{gate};
  RawClient first(server->address());
  RawClient second(server->address());
  ASSERT_TRUE(first.Send(Request("GET", "/wait")));
  ASSERT_TRUE(second.Send(Request("GET", "/wait")));
  ASSERT_TRUE(gate.WaitEntered(2));  // both connections are being answered

  RawClient newcomer(server->address());
  auto refused = newcomer.Read();
  ASSERT_TRUE(refused);
  EXPECT_EQ(refused->status, 503);
  EXPECT_TRUE(newcomer.WaitClosed());
  EXPECT_EQ(server->counters().rejected_connections, 1u);

  gate.Open();
  auto one = first.Read();
  auto two = second.Read();
  ASSERT_TRUE(one && two);
  EXPECT_EQ(one->body, "done");
  EXPECT_EQ(two->body, "done");
}

TEST(HttpServerTest, AThousandIdleConnectionsLeaveTheServerAnswering) {
  constexpr int kIdle = 1000;
  constexpr size_t kMaxConnections = 64;
  ScopedFdLimit fd_limit(kIdle + 512);
  if (!fd_limit.ok()) GTEST_SKIP() << "RLIMIT_NOFILE hard limit " << fd_limit.hard();

  const int threads_before = ThreadCount();
  HttpServerOptions options = LoopbackOptions();
  options.threads = 2;
  options.max_connections = kMaxConnections;
  options.read_timeout = 20 * kNsPerSec;  // none of them times out during the test
  auto server = StartServer(options, {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);
  const int threads_serving = ThreadCount();
  EXPECT_EQ(threads_serving, threads_before + 3);  // the poller and two workers

  sockaddr_storage addr{};
  const auto addr_len = static_cast<socklen_t>(server->address().ToSockaddr(&addr));
  std::vector<UniqueFd> idle;
  idle.reserve(kIdle);
  for (int i = 0; i < kIdle; ++i) {
    UniqueFd fd(::socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC, 0));
    ASSERT_TRUE(fd.valid()) << "socket " << i << ": " << std::strerror(errno);
    const int rc = ::connect(fd.get(), reinterpret_cast<sockaddr*>(&addr), addr_len);
    ASSERT_TRUE(rc == 0 || errno == EINPROGRESS) << "connect " << i << ": " << std::strerror(errno);
    idle.push_back(std::move(fd));
  }

  const auto start = SteadyClock::now();
  RawClient client(server->address());
  ASSERT_TRUE(client.connected());
  ASSERT_TRUE(client.Send(Request("GET", "/metrics", /*close=*/true)));
  auto reply = client.Read(/*head_request=*/false, 2s);
  const auto answered_in = SteadyClock::now() - start;
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->status, 200);
  EXPECT_LT(answered_in, 2s);

  uint64_t peak_open = 0;
  int peak_threads = 0;
  EXPECT_TRUE(Eventually(
      [&] {
        const HttpServerCounters c = server->counters();
        peak_open = std::max(peak_open, c.open_connections);
        peak_threads = std::max(peak_threads, ThreadCount());
        return c.accepted_connections >= kIdle + 1;
      },
      10s))
      << server->counters().accepted_connections;
  const HttpServerCounters c = server->counters();
  EXPECT_LE(peak_open, kMaxConnections);
  EXPECT_LE(c.open_connections, kMaxConnections);
  // Every accepted connection but those still open and the client's own
  // (closed by its Connection: close) made room or was refused.
  EXPECT_GE(c.rejected_connections, kIdle + 1 - kMaxConnections - 1);
  EXPECT_EQ(c.timed_out_connections, 0u);
  EXPECT_EQ(peak_threads, threads_serving);
  EXPECT_EQ(ThreadCount(), threads_serving);

  auto after = Fetch(server->address(), "/metrics");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  std::printf("answered in %lld ms; accepted %llu, rejected %llu, open %llu\n",
              static_cast<long long>(
                  std::chrono::duration_cast<std::chrono::milliseconds>(answered_in).count()),
              static_cast<unsigned long long>(c.accepted_connections),
              static_cast<unsigned long long>(c.rejected_connections),
              static_cast<unsigned long long>(c.open_connections));
}

// Where cpp-httplib's accept loop retries every millisecond, ours stops
// watching the listener for a while and picks the backlog up once
// descriptors are free again.
TEST(HttpServerTest, OutOfDescriptorsTheServerPausesAcceptingInsteadOfSpinning) {
  if (kSanitizedBuild) {
    // The sanitizers' runtimes open files of their own (UBSan's type checks
    // read /proc/self/maps): with no descriptor left they report errors
    // that are theirs, not the server's.
    GTEST_SKIP() << "needs descriptors the sanitizer runtime would take";
  }
  auto server =
      StartServer(LoopbackOptions(), {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);
  ScopedLogCapture log(LogLevel::kWarn);
  // Sockets made now, connected once the limit is down.
  RawClient first(server->address(), 0, RawClient::When::kLater);
  RawClient second(server->address(), 0, RawClient::When::kLater);
  RawClient third(server->address(), 0, RawClient::When::kLater);
  {
    // New descriptors must be below the limit: leave room for exactly one.
    const int lowest_free = ::dup(0);
    ASSERT_GE(lowest_free, 0);
    ::close(lowest_free);
    rlimit saved{};
    getrlimit(RLIMIT_NOFILE, &saved);
    rlimit lowered = saved;
    lowered.rlim_cur = static_cast<rlim_t>(lowest_free) + 1;
    ASSERT_EQ(setrlimit(RLIMIT_NOFILE, &lowered), 0);
    struct Restore {
      rlimit limit;
      ~Restore() { setrlimit(RLIMIT_NOFILE, &limit); }
    } restore{saved};

    ASSERT_TRUE(first.Connect());
    ASSERT_TRUE(first.Send(Request("GET", "/metrics")));  // kept alive: holds the last descriptor
    auto reply = first.Read();
    ASSERT_TRUE(reply);
    EXPECT_EQ(reply->status, 200);
    ASSERT_TRUE(second.Connect());  // completed by the kernel, waiting in the backlog
    ASSERT_TRUE(third.Connect());
    ASSERT_TRUE(second.Send(Request("GET", "/metrics", /*close=*/true)));
    ASSERT_TRUE(third.Send(Request("GET", "/metrics", /*close=*/true)));
    ASSERT_TRUE(Eventually([&] { return log.Contains("pausing accepts"); }));

    const auto cpu_before = CpuTime();
    EXPECT_FALSE(second.WaitReadable(300ms));  // no answer while out of descriptors
    const auto cpu = CpuTime() - cpu_before;
    EXPECT_LT(cpu, 50ms) << cpu.count() << " us";
    EXPECT_EQ(server->counters().accepted_connections, 1u);
  }
  // The limit is back up: the backlog is accepted within a pause.
  const auto start = SteadyClock::now();
  auto second_reply = second.Read();
  auto third_reply = third.Read();
  ASSERT_TRUE(second_reply && third_reply);
  EXPECT_EQ(second_reply->status, 200);
  EXPECT_EQ(third_reply->status, 200);
  EXPECT_LT(SteadyClock::now() - start, 1s);
}

TEST(HttpServerTest, TheDestructorReturnsPromptlyWithClientsConnected) {
  HttpServerOptions options = LoopbackOptions();
  options.threads = 1;
  options.read_timeout = 30 * kNsPerSec;
  const std::string big(16 << 20, 'x');
  auto server = StartServer(options, {{"/big", [&](const HttpRequest&) { return Text(big); }}});
  ASSERT_TRUE(server);

  std::vector<std::unique_ptr<RawClient>> idle;
  for (int i = 0; i < 10; ++i) idle.push_back(std::make_unique<RawClient>(server->address()));
  RawClient partial(server->address());
  ASSERT_TRUE(partial.Send("GET /big HT"));
  // A client that does not take its 16 MB response: the only worker is
  // stuck writing it (for up to read_timeout).
  RawClient slow(server->address(), /*receive_buffer=*/4096);
  ASSERT_TRUE(slow.Send(Request("GET", "/big")));
  ASSERT_TRUE(slow.WaitReadable());
  ASSERT_TRUE(Eventually([&] { return server->counters().accepted_connections == 12; }));

  const auto start = SteadyClock::now();
  server.reset();
  const auto took = SteadyClock::now() - start;
  EXPECT_LT(took, 1s);
  std::printf(
      "destroyed in %lld us\n",
      static_cast<long long>(std::chrono::duration_cast<std::chrono::microseconds>(took).count()));
  for (auto& client : idle) EXPECT_TRUE(client->WaitClosed(1s));
  EXPECT_TRUE(partial.WaitClosed(1s));
}

TEST(HttpServerTest, APortInUseGivesAnErrorNamingTheAddress) {
  auto first =
      StartServer(LoopbackOptions(), {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(first);
  HttpServerOptions options = LoopbackOptions();
  options.listen = first->address();
  auto second =
      HttpServer::Start(options, {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_FALSE(second.ok());
  const std::string message = second.status().message();
  EXPECT_EQ(message, "http.listen " + first->address().ToString() + ": Address already in use");
  EXPECT_NE(first->address().port(), 0);
}

TEST(HttpServerTest, ListensOnIpv6Loopback) {
  HttpServerOptions options = LoopbackOptions();
  auto any_port = transport::NetAddress::Parse("[::1]:0");
  ASSERT_TRUE(any_port.ok());
  options.listen = *any_port;
  auto server =
      HttpServer::Start(options, {{"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  if (!server.ok()) GTEST_SKIP() << "no IPv6 loopback here: " << server.status();
  EXPECT_TRUE((*server)->address().is_v6());
  EXPECT_NE((*server)->address().port(), 0);
  auto reply = Fetch((*server)->address(), "/metrics");
  ASSERT_TRUE(reply);
  EXPECT_EQ(reply->body, "ok");
}

TEST(HttpServerTest, BadOptionsAndRoutesAreRefused) {
  auto ok = [](const HttpRequest&) { return Text("ok"); };
  auto refused = [&](HttpServerOptions options, Routes routes) {
    auto server = HttpServer::Start(options, std::move(routes));
    return server.ok() ? std::string() : server.status().message();
  };
  HttpServerOptions options = LoopbackOptions();
  EXPECT_EQ(refused(HttpServerOptions{}, {{"/", ok}}), "http.listen: no address given");
  options.threads = 0;
  EXPECT_NE(refused(options, {{"/", ok}}).find("threads must be 1..64, got 0"), std::string::npos);
  options = LoopbackOptions();
  options.max_connections = 0;
  EXPECT_NE(refused(options, {{"/", ok}}).find("max_connections"), std::string::npos);
  options = LoopbackOptions();
  options.read_timeout = 0;
  EXPECT_NE(refused(options, {{"/", ok}}).find("read_timeout"), std::string::npos);
  options = LoopbackOptions();
  options.max_request_header_bytes = 10;
  EXPECT_NE(refused(options, {{"/", ok}}).find("max_request_header_bytes"), std::string::npos);
  options = LoopbackOptions();
  EXPECT_NE(refused(options, {{"metrics", ok}}).find("must start with '/'"), std::string::npos);
  EXPECT_NE(refused(options, {{"/a b", ok}}).find("no spaces"), std::string::npos);
  EXPECT_EQ(refused(options, {{"/m", ok}, {"/m", ok}}), "http.route /m: given twice");
  EXPECT_EQ(refused(options, {{"/m", nullptr}}), "http.route /m: no handler");
}

TEST(HttpServerTest, SigpipeIsLeftAloneAndAVanishedClientCostsNothing) {
  struct sigaction saved {};
  sigaction(SIGPIPE, nullptr, &saved);
  struct sigaction default_action {};
  default_action.sa_handler = SIG_DFL;
  sigaction(SIGPIPE, &default_action, nullptr);

  const std::string big(4 << 20, 'x');
  auto server =
      StartServer(LoopbackOptions(), {{"/big", [&](const HttpRequest&) { return Text(big); }},
                                      {"/metrics", [](const HttpRequest&) { return Text("ok"); }}});
  ASSERT_TRUE(server);
  struct sigaction now {};
  sigaction(SIGPIPE, nullptr, &now);
  EXPECT_EQ(now.sa_handler, SIG_DFL);

  {
    // Gone before its 4 MB answer: with SIGPIPE at its default, a send
    // without MSG_NOSIGNAL would end this process.
    RawClient vanishing(server->address(), /*receive_buffer=*/4096);
    ASSERT_TRUE(vanishing.Send(Request("GET", "/big")));
    ASSERT_TRUE(vanishing.WaitReadable());
  }
  EXPECT_TRUE(Eventually([&] { return server->counters().requests == 1; }));
  auto after = Fetch(server->address(), "/metrics");
  ASSERT_TRUE(after);
  EXPECT_EQ(after->status, 200);
  server.reset();
  sigaction(SIGPIPE, &saved, nullptr);
}

}  // namespace
}  // namespace wharf::mesh
