// collector_http_test.cc: the collector's routes, called directly (the
// merged matrix per window, the sources, the pinglist summary, the page, a
// bad window), and once over a real server on 127.0.0.1:0 read with HttpGet.
#include "mesh/collector_http.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <utility>

#include "base/sim_clock.h"
#include "mesh/dashboard.h"
#include "mesh/http_client.h"
#include "mesh/testing/matrix_samples.h"

namespace wharf::mesh {
namespace {

using ::testing::HasSubstr;

class CollectorHttpTest : public ::testing::Test {
 protected:
  void SetUp() override {
    CollectorOptions o;
    o.sources = {"http://a:1", "http://b:1"};
    o.parallel = 1;
    auto c = Collector::Create(
        std::move(o), clock_,
        [](const std::string& url, const std::string&, DurationNs) -> Result<std::string> {
          if (url == "http://a:1") return std::string(testing::kMatrixA);
          return UnavailableError("GET " + url + "/api/v1/matrix?window=10s: connection refused");
        });
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = std::move(*c);
    [[maybe_unused]] CollectorRound r = collector_->RunRound();
    for (auto& [path, handler] : CollectorRoutes(collector_.get(), "1m")) {
      routes_.emplace(path, std::move(handler));
    }
  }

  HttpResponse Get(const std::string& path,
                   std::vector<std::pair<std::string, std::string>> query = {}) {
    HttpRequest r{.method = "GET", .path = path, .query = std::move(query)};
    return routes_.at(path == "/index.html" || path == "/nope" ? "/" : path)(r);
  }

  SimClock clock_{50 * kNsPerSec};
  std::unique_ptr<Collector> collector_;
  std::map<std::string, HttpHandler> routes_;
};

TEST_F(CollectorHttpTest, MatrixPerWindowWithSources) {
  HttpResponse r = Get("/api/v1/matrix");
  ASSERT_EQ(r.status, 200) << r.body;
  EXPECT_EQ(r.content_type, "application/json");
  nlohmann::json doc = nlohmann::json::parse(r.body);
  EXPECT_EQ(doc["window"], "1m");
  EXPECT_TRUE(doc["self"].is_null());
  EXPECT_EQ(doc["sources"].size(), 2u);
  EXPECT_EQ(doc["sources"][0]["reachable"], true);
  EXPECT_EQ(doc["sources"][1]["reachable"], false);
  EXPECT_THAT(doc["sources"][1]["error"].get<std::string>(), HasSubstr("connection refused"));
  // b's row: unreachable cells, named by its URL.
  bool unreachable = false;
  for (const auto& c : doc["cells"])
    unreachable |= c["from"] == "b:1" && c["state"] == "unreachable";
  EXPECT_TRUE(unreachable);

  doc = nlohmann::json::parse(Get("/api/v1/matrix", {{"window", "10s"}}).body);
  EXPECT_EQ(doc["window"], "10s");
  r = Get("/api/v1/matrix", {{"window", "1h"}});
  EXPECT_EQ(r.status, 400);
  EXPECT_THAT(r.body, HasSubstr("window '1h': expected 10s, 1m or 10m"));
}

TEST_F(CollectorHttpTest, SourcesPinglistAndPage) {
  nlohmann::json sources = nlohmann::json::parse(Get("/api/v1/sources").body);
  EXPECT_EQ(sources["sources"][0]["name"], "a");
  EXPECT_EQ(sources["sources"][0]["age_s"], 0.0);
  nlohmann::json pinglist = nlohmann::json::parse(Get("/api/v1/pinglist").body);
  EXPECT_EQ(pinglist["version"], "demo");
  EXPECT_TRUE(pinglist["last_error"].is_null());
  HttpResponse page = Get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_EQ(page.body, DashboardHtml());
  EXPECT_EQ(Get("/index.html").status, 200);
  EXPECT_EQ(Get("/nope").status, 404);
}

TEST_F(CollectorHttpTest, ServedOverHttp) {
  auto server = StartCollectorHttp("127.0.0.1:0", collector_.get(), "1m");
  ASSERT_TRUE(server.ok()) << server.status();
  Result<std::string> body =
      HttpGet((*server)->address().ToString(), "/api/v1/matrix?window=10m", 5 * kNsPerSec);
  ASSERT_TRUE(body.ok()) << body.status();
  Result<DaemonMatrix> m = ParseMatrixJson(*body);
  ASSERT_TRUE(m.ok()) << m.status();
  EXPECT_EQ(m->window, "10m");
  EXPECT_FALSE(StartCollectorHttp("localhost:4010", collector_.get(), "1m").ok());
}

}  // namespace
}  // namespace wharf::mesh
