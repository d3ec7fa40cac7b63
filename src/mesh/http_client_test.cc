// http_client_test.cc: HttpGet against an HttpServer on 127.0.0.1:0 (the
// answers, the refused statuses, the size limit), a port nobody listens on,
// a socket that accepts but never answers (the timeout), and URLs it must
// refuse.
#include "mesh/http_client.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include "base/unique_fd.h"
#include "mesh/http_server.h"

namespace wharf::mesh {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr DurationNs kTimeout = 5 * kNsPerSec;

class HttpGetTest : public ::testing::Test {
 protected:
  void SetUp() override {
    HttpServerOptions options;
    options.listen = transport::NetAddress::Ipv4(0x7f000001, 0);
    std::vector<std::pair<std::string, HttpHandler>> routes;
    routes.emplace_back("/ok", [](const HttpRequest& r) {
      std::string body = "hello";
      for (const auto& [k, v] : r.query) body += " " + k + "=" + v;
      return HttpResponse{.status = 200, .content_type = "application/json", .body = body};
    });
    routes.emplace_back("/big", [](const HttpRequest&) {
      return HttpResponse{.status = 200, .body = std::string(100, 'x')};
    });
    routes.emplace_back("/bad", [](const HttpRequest&) {
      return HttpResponse{.status = 400, .body = "INVALID_ARGUMENT: window '5m'\nsecond line\n"};
    });
    routes.emplace_back("/busy", [](const HttpRequest&) {
      return HttpResponse{.status = 503, .body = "loop\x1b[31m did not answer\n"};
    });
    routes.emplace_back("/prefix/ok", [](const HttpRequest&) {
      return HttpResponse{.status = 200, .body = "under a prefix"};
    });
    auto server = HttpServer::Start(options, std::move(routes));
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(*server);
    base_ = "http://" + server_->address().ToString();
  }

  std::unique_ptr<HttpServer> server_;
  std::string base_;
};

TEST_F(HttpGetTest, GetsTheBodyWithOrWithoutTheScheme) {
  Result<std::string> body = HttpGet(base_, "/ok?window=1m", kTimeout);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "hello window=1m");
  body = HttpGet(server_->address().ToString(), "ok", kTimeout);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "hello");
  body = HttpGet(base_ + "/prefix/", "/ok", kTimeout);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(*body, "under a prefix");
}

TEST_F(HttpGetTest, NotFoundNamesTheUrl) {
  Result<std::string> body = HttpGet(base_, "/nothing", kTimeout);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(body.status().message(), HasSubstr("GET " + base_ + "/nothing: HTTP 404"));
}

TEST_F(HttpGetTest, RefusedStatusCarriesTheFirstLineOfTheBody) {
  Result<std::string> body = HttpGet(base_, "/bad", kTimeout);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(body.status().message(),
            "GET " + base_ + "/bad: HTTP 400: INVALID_ARGUMENT: window '5m'");
  body = HttpGet(base_, "/busy", kTimeout);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable);
  // The server's bytes are made printable: no escape reaches a terminal.
  EXPECT_THAT(body.status().message(), HasSubstr("HTTP 503: loop\\x1b[31m did not answer"));
  EXPECT_THAT(body.status().message(), Not(HasSubstr("\x1b")));
}

TEST_F(HttpGetTest, BodyOverTheLimitIsRefused) {
  Result<std::string> body = HttpGet(base_, "/big", kTimeout, 10);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kResourceExhausted);
  EXPECT_THAT(body.status().message(),
              HasSubstr(base_ + "/big: the body is over the limit of 10 bytes"));
  body = HttpGet(base_, "/big", kTimeout, 100);
  ASSERT_TRUE(body.ok()) << body.status();
  EXPECT_EQ(body->size(), 100u);
}

// A port that was just free: bound, then closed.
uint16_t FreePort() {
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7f000001);
  EXPECT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  socklen_t len = sizeof a;
  EXPECT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  return ntohs(a.sin_port);
}

TEST(HttpGet, ConnectionRefusedSaysSo) {
  const std::string base = "127.0.0.1:" + std::to_string(FreePort());
  Result<std::string> body = HttpGet(base, "/api/v1/matrix", kTimeout);
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(body.status().message(), "GET http://" + base + "/api/v1/matrix: connection refused");
}

TEST(HttpGet, ServerThatNeverAnswersTimesOut) {
  // Listening, so the kernel completes the handshake, but never read.
  UniqueFd fd(::socket(AF_INET, SOCK_STREAM, 0));
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(0x7f000001);
  ASSERT_EQ(::bind(fd.get(), reinterpret_cast<sockaddr*>(&a), sizeof a), 0);
  ASSERT_EQ(::listen(fd.get(), 4), 0);
  socklen_t len = sizeof a;
  ASSERT_EQ(::getsockname(fd.get(), reinterpret_cast<sockaddr*>(&a), &len), 0);
  const std::string base = "127.0.0.1:" + std::to_string(ntohs(a.sin_port));
  const auto start = std::chrono::steady_clock::now();
  Result<std::string> body = HttpGet(base, "/x", 200 * kNsPerMs);
  const auto took = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(body.ok());
  EXPECT_EQ(body.status().code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(body.status().message(), "GET http://" + base + "/x: no answer within 200 ms");
  EXPECT_LT(took, std::chrono::seconds(3));
}

TEST(HttpGet, BadUrlsAreRefusedBeforeConnecting) {
  for (const char* url : {"https://127.0.0.1:4002", "", "http://", "127.0.0.1:99999",
                          "127.0.0.1:", "::1:4002", "[::1:4002", "a b:1", "user@host:1"}) {
    Result<std::string> body = HttpGet(url, "/", kTimeout);
    ASSERT_FALSE(body.ok()) << url;
    EXPECT_EQ(body.status().code(), StatusCode::kInvalidArgument) << url;
    EXPECT_THAT(body.status().message(), HasSubstr("URL '")) << url;
  }
  Result<std::string> zero = HttpGet("127.0.0.1:4002", "/", 0);
  ASSERT_FALSE(zero.ok());
  EXPECT_EQ(zero.status().code(), StatusCode::kInvalidArgument);
}

TEST(NormalizeHttpUrl, WritesTheUrlOut) {
  EXPECT_EQ(NormalizeHttpUrl("127.0.0.1:4002").value_or(""), "http://127.0.0.1:4002");
  EXPECT_EQ(NormalizeHttpUrl("HTTP://host/").value_or(""), "http://host:80");
  EXPECT_EQ(NormalizeHttpUrl("[::1]:4002/a/b/").value_or(""), "http://[::1]:4002/a/b");
  EXPECT_FALSE(NormalizeHttpUrl("ftp://x").ok());
}

}  // namespace
}  // namespace wharf::mesh
