// HttpExchange on one end of a socketpair: a head in, the response out, no
// server, poller or threads around it.
#include "mesh/http_exchange.h"

#include <gtest/gtest.h>
#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "base/unique_fd.h"

namespace wharf::mesh {
namespace {

class HttpExchangeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    int fds[2];
    ASSERT_EQ(::socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, fds), 0);
    ours_.Reset(fds[0]);
    client_.Reset(fds[1]);
    int stop[2];
    ASSERT_EQ(::pipe2(stop, O_CLOEXEC), 0);
    stop_read_.Reset(stop[0]);
    stop_write_.Reset(stop[1]);
    std::vector<std::pair<std::string, HttpHandler>> routes;
    routes.emplace_back("/metrics", [](const HttpRequest& r) {
      return TextResponse(200, "metrics for " + std::string(QueryValue(r, "who")));
    });
    routes.emplace_back("/static/", [](const HttpRequest& r) { return TextResponse(200, r.path); });
    routes.emplace_back("/throws", [](const HttpRequest&) -> HttpResponse {
      throw std::runtime_error("boom");
    });
    auto exchange = HttpExchange::Create(std::move(routes), SystemClock::Get(), 5 * kNsPerSec, 100);
    ASSERT_TRUE(exchange.ok()) << exchange.status();
    exchange_ = std::move(*exchange);
  }

  // Answers `head`; returns whether the connection must close, and the
  // response the client reads in `response`.
  bool Answer(const std::string& head, std::string* response, bool last = false) {
    const bool close = exchange_->Answer(ours_.get(), head, last, stop_read_.get(),
                                         SystemClock::Get().NowNs() + kNsPerSec);
    response->clear();
    char buf[4096];
    for (;;) {
      const ssize_t n = ::recv(client_.get(), buf, sizeof buf, MSG_DONTWAIT);
      if (n <= 0) break;
      response->append(buf, static_cast<size_t>(n));
    }
    return close;
  }

  UniqueFd ours_, client_, stop_read_, stop_write_;
  std::unique_ptr<HttpExchange> exchange_;
};

TEST_F(HttpExchangeTest, ARoutedRequestGetsItsHandlersAnswerAndKeepsTheConnection) {
  std::string response;
  EXPECT_FALSE(Answer("GET /metrics?who=a%20b HTTP/1.1\r\nHost: x\r\n\r\n", &response));
  EXPECT_EQ(response.rfind("HTTP/1.1 200 OK\r\n", 0), 0u) << response;
  EXPECT_NE(response.find("\r\n\r\nmetrics for a b\n"), std::string::npos) << response;
  EXPECT_FALSE(Answer("GET /static/css/x.css HTTP/1.1\r\n\r\n", &response));
  EXPECT_NE(response.find("\r\n\r\n/static/css/x.css\n"), std::string::npos) << response;
  // HEAD: the headers, no body.
  EXPECT_FALSE(Answer("HEAD /metrics HTTP/1.1\r\n\r\n", &response));
  EXPECT_EQ(response.find("metrics for"), std::string::npos) << response;
  EXPECT_EQ(exchange_->counts().requests, 3u);
  // The last request of a connection says so.
  EXPECT_TRUE(Answer("GET /metrics HTTP/1.1\r\n\r\n", &response, /*last=*/true));
  EXPECT_NE(response.find("Connection: close"), std::string::npos) << response;
}

TEST_F(HttpExchangeTest, RefusalsAreCountedAndCloseTheConnection) {
  std::string response;
  EXPECT_FALSE(Answer("GET /nothing HTTP/1.1\r\n\r\n", &response));
  EXPECT_EQ(response.rfind("HTTP/1.1 404", 0), 0u) << response;
  EXPECT_NE(response.find("/metrics\n"), std::string::npos) << "404 lists the routes: " << response;
  EXPECT_TRUE(Answer("POST /metrics HTTP/1.1\r\nContent-Length: 0\r\n\r\n", &response));
  EXPECT_EQ(response.rfind("HTTP/1.1 405", 0), 0u) << response;
  EXPECT_NE(response.find("Allow: GET, HEAD"), std::string::npos) << response;
  EXPECT_TRUE(Answer("GET /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\n", &response));
  EXPECT_EQ(response.rfind("HTTP/1.1 413", 0), 0u) << response;
  EXPECT_TRUE(Answer("this is not http\r\n\r\n", &response));
  EXPECT_EQ(response.rfind("HTTP/1.1 400", 0), 0u) << response;
  // A handler that throws is the server's fault, not the client's: the connection stays.
  EXPECT_FALSE(Answer("GET /throws HTTP/1.1\r\n\r\n", &response));
  EXPECT_EQ(response.rfind("HTTP/1.1 500", 0), 0u) << response;
  const HttpExchange::Counts c = exchange_->counts();
  EXPECT_EQ(c.requests, 5u);
  EXPECT_EQ(c.not_found, 1u);
  EXPECT_EQ(c.bad_requests, 3u);
  EXPECT_EQ(c.handler_errors, 1u);
}

TEST_F(HttpExchangeTest, BadRoutesAreRefusedNamingThem) {
  for (const std::string& path : {std::string("metrics"), std::string("/a b"), std::string("")}) {
    std::vector<std::pair<std::string, HttpHandler>> routes;
    routes.emplace_back(path, [](const HttpRequest&) { return TextResponse(200, ""); });
    auto e = HttpExchange::Create(std::move(routes), SystemClock::Get(), kNsPerSec, 1);
    ASSERT_FALSE(e.ok()) << path;
    EXPECT_NE(e.status().message().find("must start with '/'"), std::string::npos) << e.status();
  }
  std::vector<std::pair<std::string, HttpHandler>> twice;
  twice.emplace_back("/x", [](const HttpRequest&) { return TextResponse(200, ""); });
  twice.emplace_back("/x", [](const HttpRequest&) { return TextResponse(200, ""); });
  auto e = HttpExchange::Create(std::move(twice), SystemClock::Get(), kNsPerSec, 1);
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.status().message(), "http.route /x: given twice");
}

}  // namespace
}  // namespace wharf::mesh
