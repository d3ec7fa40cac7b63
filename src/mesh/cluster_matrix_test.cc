// cluster_matrix_test.cc: ParseMatrixJson on daemons' documents and on
// garbage, Merge of two daemons' rows with a source that did not answer
// (with and without a last good matrix), and the merged JSON.
#include "mesh/cluster_matrix.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "mesh/testing/matrix_samples.h"

namespace wharf::mesh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

DaemonMatrix Parsed(std::string_view json) {
  Result<DaemonMatrix> m = ParseMatrixJson(json);
  EXPECT_TRUE(m.ok()) << m.status();
  return m.ok() ? std::move(m).value() : DaemonMatrix{};
}

TEST(ParseMatrixJson, ReadsADaemonsDocument) {
  DaemonMatrix m = Parsed(testing::kMatrixA);
  EXPECT_EQ(m.self, "a");
  EXPECT_EQ(m.pinglist_version, "demo");
  EXPECT_EQ(m.window, "1m");
  EXPECT_THAT(m.hosts, ElementsAre("a", "b", "c"));
  ASSERT_EQ(m.cells.size(), 3u);
  const MatrixCell& c = m.cells[0];
  EXPECT_EQ(c.from, "a");
  EXPECT_EQ(c.to, "b");
  EXPECT_EQ(c.transport, "homa");
  EXPECT_EQ(c.state, kCellOk);
  EXPECT_EQ(c.p50_us, 52.3);
  EXPECT_EQ(c.p99_us, 180.0);
  EXPECT_EQ(c.network_p50_us, 40.1);
  EXPECT_EQ(c.network_p99_us, 150.2);
  EXPECT_EQ(c.loss_ratio, 0.0);
  EXPECT_EQ(c.answered, 600u);
  EXPECT_EQ(c.unanswered, 0u);
  EXPECT_EQ(c.age_s, 0.1);
  EXPECT_EQ(c.app_p50_us, 75.0);
  EXPECT_EQ(c.app_p99_us, 2400.0);
  EXPECT_EQ(c.app_answered, 9000u);
  EXPECT_EQ(c.app_unanswered, 0u);
  // A cell without the applications' figures (an older wharfd) has none.
  EXPECT_FALSE(m.cells[1].app_p50_us.has_value());
  EXPECT_EQ(m.cells[1].app_answered, 0u);
  // Nulls stay empty, never 0.
  EXPECT_EQ(m.cells[1].state, kCellAllFailed);
  EXPECT_FALSE(m.cells[1].p50_us.has_value());
  EXPECT_FALSE(m.cells[1].loss_ratio.has_value());
  EXPECT_FALSE(m.cells[1].age_s.has_value());
}

TEST(ParseMatrixJson, NullsMissingFiguresAndUnknownFieldsAreFine) {
  DaemonMatrix m = Parsed(
      R"({"self": null, "pinglist_version": null, "hosts": [], "future": {"x": 1},
          "cells": [{"from": "", "to": "b", "transport": "tcp", "state": "warming_up"}]})");
  EXPECT_EQ(m.self, "");
  EXPECT_EQ(m.pinglist_version, "");
  EXPECT_EQ(m.window, "");
  ASSERT_EQ(m.cells.size(), 1u);
  EXPECT_EQ(m.cells[0].state, "warming_up");
  EXPECT_FALSE(m.cells[0].p99_us.has_value());
  EXPECT_EQ(m.cells[0].answered, 0u);
}

TEST(ParseMatrixJson, GarbageIsAnErrorNamingTheField) {
  struct Case {
    const char* json;
    const char* error;
  };
  for (const Case& c : std::vector<Case>{
           {"", "matrix: not JSON"},
           {"<html>502 Bad Gateway</html>", "matrix: not JSON"},
           {R"({"hosts": [], "cells": [)", "matrix: not JSON"},
           {"[1, 2]", "matrix: expected an object, got array"},
           {R"({"cells": []})", "hosts: missing"},
           {R"({"hosts": {}, "cells": []})", "hosts: expected an array, got object"},
           {R"({"hosts": ["a", 7], "cells": []})", "hosts[1]: expected a string, got number"},
           {R"({"hosts": [], "cells": "none"})", "cells: expected an array, got string"},
           {R"({"hosts": [], "cells": [null]})", "cells[0]: expected an object, got null"},
           {R"({"self": 5, "hosts": [], "cells": []})",
            "self: expected a string or null, got number"},
           {R"({"hosts": [], "cells": [{"to": "b", "transport": "homa", "state": "ok"}]})",
            "cells[0].from: missing"},
           {R"({"hosts": [], "cells": [{"from": "a", "to": "b", "transport": "homa", "state": "ok"},
                 {"from": "a", "to": "c", "transport": "homa", "state": "ok", "p50_us": "52"}]})",
            "cells[1].p50_us: expected a number or null, got string"},
           {R"({"hosts": [], "cells": [{"from": "a", "to": "b", "transport": "homa", "state": "ok",
                 "answered": -1}]})",
            "cells[0].answered: expected a count (integer >= 0), got number"},
           {R"({"hosts": [], "cells": [{"from": "a", "to": "b", "transport": "homa", "state": "ok",
                 "age_s": [1]}]})",
            "cells[0].age_s: expected a number or null, got array"},
       }) {
    Result<DaemonMatrix> m = ParseMatrixJson(c.json);
    ASSERT_FALSE(m.ok()) << c.json;
    EXPECT_EQ(m.status().code(), StatusCode::kInvalidArgument) << c.json;
    EXPECT_EQ(m.status().message(), c.error) << c.json;
  }
  // Deep nesting and odd bytes neither crash nor throw.
  EXPECT_FALSE(ParseMatrixJson(std::string(100000, '[')).ok());
  EXPECT_FALSE(ParseMatrixJson(std::string("{\"hosts\": [\"\xff\xfe\"], \"cells\": []}")).ok());
}

SourceFetch Answered(std::string url, std::string_view json, TimeNs fetched_ns) {
  return SourceFetch{
      .url = std::move(url), .reachable = true, .fetched_ns = fetched_ns, .matrix = Parsed(json)};
}

TEST(Merge, TwoDaemonsRowsAndASourceThatNeverAnswered) {
  const TimeNs now = 100 * kNsPerSec;
  ClusterMatrix m =
      Merge("1m",
            {Answered("http://127.0.0.1:4102", testing::kMatrixA, now),
             Answered("http://127.0.0.1:4202", testing::kMatrixB, now),
             SourceFetch{.url = "http://127.0.0.1:4302", .error = "connection refused"}},
            now);
  EXPECT_EQ(m.window, "1m");
  EXPECT_EQ(m.taken_ns, now);
  EXPECT_THAT(m.hosts, ElementsAre("a", "b", "c", "d"));
  ASSERT_EQ(m.sources.size(), 3u);
  EXPECT_EQ(m.sources[0].name, "a");
  EXPECT_TRUE(m.sources[0].reachable);
  EXPECT_EQ(m.sources[0].pinglist_version, "demo");
  EXPECT_EQ(m.sources[1].name, "b");
  EXPECT_FALSE(m.sources[2].reachable);
  EXPECT_EQ(m.sources[2].name, "");
  EXPECT_EQ(m.sources[2].error, "connection refused");
  EXPECT_EQ(m.sources[2].fetched_ns, 0);
  EXPECT_EQ(SourceRowName(m.sources[2]), "127.0.0.1:4302");

  // a's 3 cells, b's 3, then the silent source's row: every host but
  // itself (it has no name) over every transport seen.
  ASSERT_EQ(m.cells.size(), 6u + 8u);
  EXPECT_EQ(m.cells[3].from, "b");
  std::vector<std::string> silent;
  for (size_t i = 6; i < m.cells.size(); ++i) {
    EXPECT_EQ(m.cells[i].from, "127.0.0.1:4302");
    EXPECT_EQ(m.cells[i].state, kCellUnreachable);
    EXPECT_FALSE(m.cells[i].p50_us.has_value());
    silent.push_back(m.cells[i].to + "/" + m.cells[i].transport);
  }
  EXPECT_THAT(silent, ElementsAre("a/homa", "b/homa", "c/homa", "d/homa", "a/tcp", "b/tcp", "c/tcp",
                                  "d/tcp"));
}

TEST(Merge, ASourceThatStoppedAnsweringKeepsItsNameAndPairs) {
  const TimeNs then = 10 * kNsPerSec;
  const TimeNs now = 40 * kNsPerSec;
  SourceFetch b = Answered("http://127.0.0.1:4202", testing::kMatrixB, then);
  b.reachable = false;
  b.error = "GET http://127.0.0.1:4202/api/v1/matrix?window=1m: connection refused";
  ClusterMatrix m =
      Merge("1m", {Answered("http://127.0.0.1:4102", testing::kMatrixA, now), b}, now);
  ASSERT_EQ(m.sources.size(), 2u);
  EXPECT_EQ(m.sources[1].name, "b");
  EXPECT_FALSE(m.sources[1].reachable);
  EXPECT_EQ(m.sources[1].fetched_ns, then);
  EXPECT_EQ(m.sources[1].pinglist_version, "demo");
  ASSERT_EQ(m.cells.size(), 6u);
  for (size_t i = 3; i < 6; ++i) {
    EXPECT_EQ(m.cells[i].from, "b");
    EXPECT_EQ(m.cells[i].state, kCellUnreachable);
  }
  EXPECT_EQ(m.cells[3].to, "a");
  EXPECT_EQ(m.cells[3].transport, "homa");
  // Its last answer was 0.2 s old then, 30 s before now.
  ASSERT_TRUE(m.cells[3].age_s.has_value());
  EXPECT_DOUBLE_EQ(*m.cells[3].age_s, 30.2);
  EXPECT_FALSE(m.cells[4].age_s.has_value());  // no answer then either
}

TEST(Merge, TheFirstSourceOfAPairWinsAndNamelessRowsTakeTheUrl) {
  const TimeNs now = kNsPerSec;
  ClusterMatrix m =
      Merge("10s",
            {Answered("http://x:1", testing::kMatrixA, now),
             Answered("http://y:1", testing::kMatrixA, now),
             Answered("http://z:1",
                      R"({"self": null, "hosts": ["a"], "cells": [{"from": "", "to": "a",
                    "transport": "homa", "state": "no_data"}]})",
                      now)},
            now);
  ASSERT_EQ(m.cells.size(), 4u);
  EXPECT_EQ(m.cells[3].from, "z:1");
  EXPECT_EQ(SourceRowName(m.sources[2]), "z:1");
}

TEST(RenderClusterMatrixJson, TheDaemonsShapePlusSources) {
  const TimeNs then = 10 * kNsPerSec;
  const TimeNs now = 12500 * kNsPerMs;
  SourceFetch b = Answered("http://127.0.0.1:4202", testing::kMatrixB, then);
  b.reachable = false;
  b.error = "connection refused";
  ClusterMatrix m =
      Merge("1m", {Answered("http://127.0.0.1:4102", testing::kMatrixA, now), b}, now);
  const std::string json = RenderClusterMatrixJson(m);

  // Our own parser reads it back, cell for cell.
  Result<DaemonMatrix> again = ParseMatrixJson(json);
  ASSERT_TRUE(again.ok()) << again.status();
  EXPECT_EQ(again->self, "");
  EXPECT_EQ(again->pinglist_version, "demo");
  EXPECT_EQ(again->window, "1m");
  EXPECT_EQ(again->hosts, m.hosts);
  ASSERT_EQ(again->cells.size(), m.cells.size());
  EXPECT_EQ(again->cells[0].p50_us, 52.3);
  EXPECT_EQ(again->cells[3].state, "unreachable");

  const nlohmann::json doc = nlohmann::json::parse(json);
  EXPECT_TRUE(doc["self"].is_null());
  ASSERT_EQ(doc["sources"].size(), 2u);
  EXPECT_EQ(doc["sources"][0],
            nlohmann::json::parse(R"({"url": "http://127.0.0.1:4102", "name": "a",
                "reachable": true, "error": null, "age_s": 0.0, "pinglist_version": "demo"})"));
  EXPECT_EQ(doc["sources"][1],
            nlohmann::json::parse(R"({"url": "http://127.0.0.1:4202", "name": "b",
                "reachable": false, "error": "connection refused", "age_s": 2.5,
                "pinglist_version": "demo"})"));
  EXPECT_EQ(doc["cells"][0]["network_p99_us"], 150.2);
  EXPECT_TRUE(doc["cells"][1]["p50_us"].is_null());

  const nlohmann::json sources = nlohmann::json::parse(RenderSourcesJson(m));
  EXPECT_EQ(sources["window"], "1m");
  EXPECT_EQ(sources["sources"], doc["sources"]);
  const nlohmann::json pinglist = nlohmann::json::parse(RenderClusterPinglistJson(m));
  EXPECT_EQ(pinglist["version"], "demo");
  EXPECT_EQ(pinglist["hosts"], doc["hosts"]);
}

TEST(RenderClusterMatrixJson, VersionsThatDisagreeAreNull) {
  std::string other = testing::kMatrixB;
  other.replace(other.find("\"demo\""), 6, "\"demo2\"");
  ClusterMatrix m =
      Merge("1m", {Answered("http://a", testing::kMatrixA, 1), Answered("http://b", other, 1)}, 1);
  const nlohmann::json doc = nlohmann::json::parse(RenderClusterMatrixJson(m));
  EXPECT_TRUE(doc["pinglist_version"].is_null());
  EXPECT_EQ(doc["sources"][1]["pinglist_version"], "demo2");
}

TEST(RenderClusterMatrixJson, NamesWithControlBytesStayValidJson) {
  ClusterMatrix m =
      Merge("1m",
            {Answered("http://a",
                      R"({"self": "evil\u001b[2J", "hosts": ["evil\u001b[2J"], "cells": []})", 1)},
            1);
  const std::string json = RenderClusterMatrixJson(m);
  EXPECT_THAT(json, HasSubstr(R"(evil\u001b[2J)"));
  EXPECT_TRUE(ParseMatrixJson(json).ok());
}

}  // namespace
}  // namespace wharf::mesh
