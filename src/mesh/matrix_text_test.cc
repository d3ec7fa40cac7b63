// matrix_text_test.cc: the terminal table, compared whole in plain text (a
// small matrix with a source that did not answer, each metric's figures,
// long names cut with their legend), and the colour codes when asked.
#include "mesh/matrix_text.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "mesh/testing/matrix_samples.h"

namespace wharf::mesh {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;

constexpr TimeNs kNow = 100 * kNsPerSec;

SourceFetch Answered(std::string url, std::string_view json) {
  Result<DaemonMatrix> m = ParseMatrixJson(json);
  EXPECT_TRUE(m.ok()) << m.status();
  return SourceFetch{.url = std::move(url),
                     .reachable = true,
                     .fetched_ns = kNow,
                     .matrix = m.ok() ? std::optional<DaemonMatrix>(*m) : std::nullopt};
}

// a and b answered; 127.0.0.1:4302 never did.
ClusterMatrix Sample() {
  return Merge("1m",
               {Answered("http://127.0.0.1:4102", testing::kMatrixA),
                Answered("http://127.0.0.1:4202", testing::kMatrixB),
                SourceFetch{.url = "http://127.0.0.1:4302",
                            .error = "GET http://127.0.0.1:4302/api/v1/matrix?window=1m: "
                                     "connection refused"}},
               kNow);
}

TEST(MatrixMetric, NamesParseBack) {
  for (Metric m : {Metric::kP50, Metric::kP99, Metric::kLoss, Metric::kNetworkP50,
                   Metric::kNetworkP99, Metric::kAppP50, Metric::kAppP99}) {
    Result<Metric> again = ParseMetric(MetricName(m));
    ASSERT_TRUE(again.ok());
    EXPECT_EQ(*again, m);
  }
  Result<Metric> bad = ParseMetric("p95");
  ASSERT_FALSE(bad.ok());
  EXPECT_EQ(bad.status().message(),
            "metric 'p95': expected p50, p99, loss, network_p50, network_p99, app_p50 or "
            "app_p99");
}

TEST(RenderMatrixText, PlainP50Homa) {
  EXPECT_EQ(RenderMatrixText(Sample(), Metric::kP50, "", false),
            "from \\ to          a     b     c     d\n"
            "a                  .  52us  FAIL\n"
            "b               61us     .    --\n"
            "127.0.0.1:4302  DOWN  DOWN  DOWN  DOWN\n"
            "\n"
            "p50 round trip over homa, window 1m; rows are sources, columns destinations\n"
            "other transports: tcp\n"
            "-- no data, FAIL every probe failed, DOWN source did not answer, . itself, blank "
            "not probed\n"
            "sources:\n"
            "  a               http://127.0.0.1:4102  pinglist demo\n"
            "  b               http://127.0.0.1:4202  pinglist demo\n"
            "  127.0.0.1:4302  http://127.0.0.1:4302  DOWN: GET "
            "http://127.0.0.1:4302/api/v1/matrix?window=1m: connection refused\n");
}

TEST(RenderMatrixText, PlainLossTcpWithAStaleSource) {
  ClusterMatrix m = Sample();
  // b stopped answering 42 s ago: its row is DOWN, its last answer dated.
  SourceFetch b = Answered("http://127.0.0.1:4202", testing::kMatrixB);
  b.reachable = false;
  b.fetched_ns = kNow - 42 * kNsPerSec;
  b.error = "no answer within 2 s";
  m = Merge("10s", {Answered("http://127.0.0.1:4102", testing::kMatrixA), b}, kNow);
  EXPECT_EQ(RenderMatrixText(m, Metric::kLoss, "tcp", false),
            "from \\ to     a     b     c     d\n"
            "a             .  0.5%\n"
            "b          DOWN     .  DOWN  DOWN\n"
            "\n"
            "loss over tcp, window 10s; rows are sources, columns destinations\n"
            "other transports: homa\n"
            "-- no data, FAIL every probe failed, DOWN source did not answer, . itself, blank "
            "not probed\n"
            "sources:\n"
            "  a  http://127.0.0.1:4102  pinglist demo\n"
            "  b  http://127.0.0.1:4202  DOWN: no answer within 2 s; last answer 42s ago\n");
}

TEST(RenderMatrixText, FormatsEachMetric) {
  ClusterMatrix m = Sample();
  const std::string p99 = RenderMatrixText(m, Metric::kP99, "homa", false);
  EXPECT_THAT(p99, HasSubstr("\na                   .  180us  FAIL\n"));
  EXPECT_THAT(p99, HasSubstr("\nb               250us      .    --\n"));
  const std::string tcp = RenderMatrixText(m, Metric::kNetworkP50, "tcp", false);
  EXPECT_THAT(tcp, HasSubstr("\na                    .  1.2ms\n"));
  EXPECT_THAT(tcp, HasSubstr("\nb               14.0ms      .\n"));
  EXPECT_THAT(tcp, HasSubstr("p50 network time over tcp"));
  EXPECT_THAT(RenderMatrixText(m, Metric::kNetworkP99, "tcp", false), HasSubstr("39.0ms"));
  EXPECT_THAT(RenderMatrixText(m, Metric::kLoss, "tcp", false), HasSubstr("20%"));
  // The applications' own traffic: a->b only; a->c, whose probes all
  // failed, had none ("--", not FAIL).
  const std::string app = RenderMatrixText(m, Metric::kAppP99, "homa", false);
  EXPECT_THAT(app, HasSubstr("\na                  .  2.4ms    --\n"));
  EXPECT_THAT(app, HasSubstr("\nb                 --      .    --\n"));
  EXPECT_THAT(app, HasSubstr("applications' p99 round trip over homa"));
  EXPECT_THAT(RenderMatrixText(m, Metric::kAppP50, "homa", false), HasSubstr("  75us  "));
}

TEST(RenderMatrixText, FiguresAcrossTheirRanges) {
  std::string json = R"({"self": "s", "hosts": ["s"], "cells": [)";
  const std::vector<double> us = {0.0, 4.25, 52.3, 999.4, 999.6, 1300, 99940, 250000, 2.1e6, 1.5e8};
  const std::vector<double> loss = {0, 0.0004, 0.005, 0.0999, 0.5, 1, 0, 0, 0, 0};
  for (size_t i = 0; i < us.size(); ++i) {
    json += (i ? "," : "") + std::string(R"({"from": "s", "to": "h)") + std::to_string(i) +
            R"(", "transport": "homa", "state": "ok", "p50_us": )" + std::to_string(us[i]) +
            R"(, "loss_ratio": )" + std::to_string(loss[i]) + "}";
  }
  json += "]}";
  ClusterMatrix m = Merge("1m", {Answered("http://s", json)}, kNow);
  std::string text = RenderMatrixText(m, Metric::kP50, "", false);
  EXPECT_EQ(text.substr(0, text.find("\n\n")),
            "from \\ to     s     h0     h1    h2     h3     h4     h5      h6     h7    h8    h9\n"
            "s             .  0.0us  4.2us  52us  999us  1.0ms  1.3ms  99.9ms  250ms  2.1s  150s");
  text = RenderMatrixText(m, Metric::kLoss, "", false);
  EXPECT_EQ(text.substr(0, text.find("\n\n")),
            "from \\ to     s    h0     h1    h2    h3    h4    h5    h6    h7    h8    h9\n"
            "s             .    0%  <0.1%  0.5%   10%   50%  100%    0%    0%    0%    0%");
}

TEST(RenderMatrixText, LongNamesAreCutWithALegend) {
  ClusterMatrix m = Merge("1m", {Answered("http://r:1", R"({"self": "rack12-host-a.example.com",
          "hosts": ["rack12-host-a.example.com", "rack12-host-b.example.com", "short"],
          "cells": [{"from": "rack12-host-a.example.com", "to": "rack12-host-b.example.com",
                     "transport": "homa", "state": "ok", "p50_us": 70}]})")},
                          kNow);
  const std::string text = RenderMatrixText(m, Metric::kP50, "", false);
  EXPECT_EQ(text.substr(0, text.find("\n\n")),
            "from \\ to   rack12-h~1  rack12-h~2  short\n"
            "rack12-h~1           .        70us");
  EXPECT_THAT(text, HasSubstr("\nnames:\n"
                              "  rack12-h~1  rack12-host-a.example.com\n"
                              "  rack12-h~2  rack12-host-b.example.com\n"));
  EXPECT_THAT(text, HasSubstr("  rack12-h~1  http://r:1  pinglist (none)\n"));
}

TEST(RenderMatrixText, EscapesInNamesNeverReachTheTerminal) {
  ClusterMatrix m = Merge(
      "1m", {Answered("http://e:1", R"({"self": "e\u001b]0;x\u0007", "hosts": ["e\u001b]0;x\u0007"],
          "cells": []})")},
      kNow);
  const std::string text = RenderMatrixText(m, Metric::kP50, "", true);
  EXPECT_THAT(text, Not(HasSubstr("\x1b]")));
  EXPECT_THAT(text, HasSubstr("e\\x1b]0;x\\x07"));
}

TEST(RenderMatrixText, ColourUsesTheDashboardsThresholds) {
  ClusterMatrix m = Sample();
  const std::string p50 = RenderMatrixText(m, Metric::kP50, "homa", true);
  EXPECT_THAT(p50, HasSubstr("\033[32m52us\033[0m"));    // green: < 100 us
  EXPECT_THAT(p50, HasSubstr("\033[35mFAIL\033[0m"));    // magenta: every probe failed
  EXPECT_THAT(p50, HasSubstr("\033[90m--\033[0m"));      // grey: no data
  EXPECT_THAT(p50, HasSubstr("\033[1;31mDOWN\033[0m"));  // the source did not answer
  EXPECT_THAT(p50, HasSubstr("scale: \033[32m<100us\033[0m"));
  // Alignment counts what shows, not the escapes.
  EXPECT_THAT(p50, HasSubstr("\nb               \033[32m61us\033[0m     .    \033[90m--\033[0m\n"));
  const std::string tcp = RenderMatrixText(m, Metric::kP50, "tcp", true);
  EXPECT_THAT(tcp, HasSubstr("\033[38;5;208m1.3ms\033[0m"));  // orange: < 10 ms
  EXPECT_THAT(tcp, HasSubstr("\033[31m15.0ms\033[0m"));       // red: >= 10 ms
  const std::string loss = RenderMatrixText(m, Metric::kLoss, "tcp", true);
  EXPECT_THAT(loss, HasSubstr("\033[33m0.5%\033[0m"));  // yellow: < 1%
  EXPECT_THAT(loss, HasSubstr("\033[31m20%\033[0m"));   // red: >= 10%
  const std::string homa_loss = RenderMatrixText(m, Metric::kLoss, "homa", true);
  EXPECT_THAT(homa_loss, HasSubstr("\033[32m0%\033[0m"));  // green: none lost
  // And none at all without colour.
  EXPECT_THAT(RenderMatrixText(m, Metric::kP50, "homa", false), Not(HasSubstr("\033")));
}

// `wharf mesh --from` a collector: its rows are the ones it relays (b's
// unreachable), not one of its own.
TEST(RenderMatrixText, ThroughACollector) {
  SourceFetch b = Answered("http://127.0.0.1:4202", testing::kMatrixB);
  b.reachable = false;
  b.error = "connection refused";
  const std::string relayed = RenderClusterMatrixJson(
      Merge("1m", {Answered("http://127.0.0.1:4102", testing::kMatrixA), b}, kNow));
  ClusterMatrix m = Merge("1m", {Answered("http://127.0.0.1:4010", relayed)}, kNow);
  const std::string text = RenderMatrixText(m, Metric::kP50, "", false);
  EXPECT_EQ(text.substr(0, text.find("\n\n")),
            "from \\ to     a     b     c     d\n"
            "a             .  52us  FAIL\n"
            "b          DOWN     .  DOWN");
  EXPECT_THAT(text,
              HasSubstr("sources:\n  127.0.0.1:4010  http://127.0.0.1:4010  pinglist demo\n"));
}

TEST(RenderMatrixText, NoSourcesNoCells) {
  ClusterMatrix m = Merge("1m", {}, kNow);
  EXPECT_EQ(RenderMatrixText(m, Metric::kP50, "", false),
            "from \\ to\n"
            "(no sources)\n"
            "\n"
            "p50 round trip over (no transport), window 1m; rows are sources, columns "
            "destinations\n"
            "-- no data, FAIL every probe failed, DOWN source did not answer, . itself, blank "
            "not probed\n");
}

}  // namespace
}  // namespace wharf::mesh
