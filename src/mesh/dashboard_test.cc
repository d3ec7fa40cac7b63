// Tests for the dashboard page (dashboard.h, dashboard.html): its bytes as
// embedded, then the page in a real browser. An HttpServer serves the page
// and canned /api/v1 JSON; headless Chromium (testing/chromium.h) loads it,
// and the tests read the DOM it built (one cell per probed pair with its
// colour class, per metric, transport and window asked in the URL; the
// drill-down chart; the error banner; JSON strings kept as text), its
// console log, and a screenshot kept as an artifact. The browser tests need
// the Debian package `chromium` and fail, not skip, without it.
#include "mesh/dashboard.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "mesh/http_server.h"
#include "mesh/testing/chromium.h"
#include "transport/net_address.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::mesh {
namespace {

using Json = nlohmann::ordered_json;
using ::testing::HasSubstr;
using ::testing::IsEmpty;
using ::testing::Not;

// ---- DashboardHtml ----------------------------------------------------------

TEST(DashboardHtmlTest, IsOneSelfContainedPage) {
  const std::string_view page = DashboardHtml();
  ASSERT_FALSE(page.empty());
  EXPECT_TRUE(page.starts_with("<!DOCTYPE html>"));
  EXPECT_TRUE(page.ends_with("</html>\n"));
  EXPECT_EQ(page.find("</html>"), page.size() - 8) << "one document, nothing after it";
  // Nothing fetched from elsewhere: no absolute URL, no external script,
  // stylesheet, import or CSS url().
  for (std::string_view outside :
       {"http://", "https://", "<script src", "stylesheet", "@import", "url(", "//cdn", "src=\""}) {
    EXPECT_EQ(page.find(outside), std::string_view::npos) << outside;
  }
  // Strings reach the DOM only as text.
  for (std::string_view markup_sink :
       {"innerHTML", "outerHTML", "insertAdjacentHTML", "document.write", "eval("}) {
    EXPECT_EQ(page.find(markup_sink), std::string_view::npos) << markup_sink;
  }
  // The class names the tests below (and users' tooling) rely on.
  for (std::string_view cls : {"cell-good", "cell-warn", "cell-bad", "cell-severe", "cell-nodata",
                               "cell-failed", "cell-blank", "cell-link"}) {
    EXPECT_NE(page.find(cls), std::string_view::npos) << cls;
  }
}

// ---- canned API -------------------------------------------------------------

Json Cell(std::string_view from, std::string_view to, std::string_view transport,
          std::string_view state, Json p50_us, Json p99_us, Json loss_ratio, int answered,
          int unanswered, Json age_s, Json app_p50_us = nullptr, Json app_p99_us = nullptr,
          int app_unanswered = 0) {
  return Json{{"from", from},
              {"to", to},
              {"transport", transport},
              {"state", state},
              {"p50_us", p50_us},
              {"p99_us", p99_us},
              {"network_p50_us", p50_us.is_null() ? Json() : Json(20.0)},
              {"network_p99_us", nullptr},
              {"loss_ratio", loss_ratio},
              {"answered", answered},
              {"unanswered", unanswered},
              {"age_s", age_s},
              {"app_p50_us", app_p50_us},
              {"app_p99_us", app_p99_us},
              {"app_answered", app_p50_us.is_null() ? 0 : 500},
              {"app_unanswered", app_unanswered}};
}

// What a cluster of a, b and c looks like: self "a" probes b over homa (ok,
// p50 50 us, p99 150 us) and c over homa (every probe failed) and over tcp
// (ok, 800 us); a second row, from b, has b->a (p50 2.5 ms, p99 25 ms, 5%
// loss) and b->c (no data), as a collector's matrix would. The
// applications' own calls: a->b p50 70 us, p99 3 ms; a->c over homa all
// unanswered; none elsewhere.
Json Matrix(std::string_view window) {
  Json cells = Json::array();
  cells.push_back(Cell("a", "b", "homa", "ok", 50.0, 150.0, 0.0, 60, 0, 3.0, 70.0, 3000.0));
  cells.push_back(Cell("a", "c", "homa", "all_failed", nullptr, nullptr, 1.0, 0, 60, nullptr,
                       nullptr, nullptr, 4));
  cells.push_back(Cell("a", "c", "tcp", "ok", 800.0, 900.0, 0.0, 60, 0, 0.4));
  cells.push_back(Cell("b", "a", "homa", "ok", 2500.0, 25000.0, 0.05, 57, 3, 1.5));
  cells.push_back(Cell("b", "c", "homa", "no_data", nullptr, nullptr, nullptr, 0, 0, nullptr));
  return Json{{"self", "a"},
              {"pinglist_version", "v7"},
              {"window", window},
              {"hosts", {"a", "b", "c"}},
              {"cells", cells}};
}

Json Pinglist() {
  return Json{{"path", "/etc/wharf/pinglist.yaml"},
              {"version", "v7"},
              {"self", "a"},
              {"hosts", {"a", "b", "c"}},
              {"loads", 1},
              {"load_failures", 0},
              {"last_error", nullptr},
              {"loaded_age_s", 100.0},
              {"targets", Json::array()}};
}

// a->b over homa: ten minutes of 10 s points, two with loss and one in which
// nothing answered.
Json Pair() {
  Json history = Json::array();
  for (int i = 0; i < 60; ++i) {
    const bool silent = i == 30;
    const int lost = silent ? 10 : (i == 20 || i == 40) ? 2 : 0;
    history.push_back(Json{{"age_s", 600.0 - 10.0 * i},
                           {"answered", 10 - lost},
                           {"unanswered", lost},
                           {"p50_us", silent ? Json() : Json(50.0 + i % 7)},
                           {"p99_us", silent ? Json() : Json(120.0 + (i * 13) % 80)},
                           {"max_us", silent ? Json() : Json(300.0)}});
  }
  Json window{
      {"state", "ok"},
      {"answered", 60},
      {"unanswered", 0},
      {"loss_ratio", 0.0},
      {"rtt", {{"min_us", 40.0}, {"p50_us", 50.0}, {"p99_us", 150.0}, {"max_us", 300.0}}},
      {"network", {{"min_us", 20.0}, {"p50_us", 30.0}, {"p99_us", 90.0}, {"max_us", 120.0}}}};
  Json target{{"host", "b"},
              {"transport", "homa"},
              {"uri", "homa://10.0.0.2:4000"},
              {"origin", "pinglist"},
              {"interval_s", 1.0},
              {"timeout_s", 1.0},
              {"size_bytes", 64},
              {"priority", 5},
              {"dscp", 40},
              {"timestamps", {{"send", "kernel"}, {"receive", "mixed"}}},
              {"in_flight", 0},
              {"counters",
               {{"sent", 600}, {"answered", 594}, {"lost", 14}, {"failed", 0}, {"reordered", 0}}},
              {"last_answer_age_s", 3.0},
              {"last_sent_age_s", 0.4},
              {"last_failure", nullptr},
              {"windows", {{"10s", window}, {"1m", window}, {"10m", window}}}};
  Json app{{"state", "ok"},
           {"answered", 4321},
           {"unanswered", 0},
           {"failure_ratio", 0.0},
           {"rtt", {{"min_us", 60.0}, {"p50_us", 70.0}, {"p99_us", 3000.0}, {"max_us", 9000.0}}}};
  target["passive"] = Json{{"transport", "homa"},
                           {"peer", "10.0.0.2:4000"},
                           {"host", "b"},
                           {"round_trips", 99999},
                           {"failures", 0},
                           {"last_age_s", 0.2},
                           {"windows", {{"10s", app}, {"1m", app}, {"10m", app}}}};
  return Json{{"self", "a"}, {"pinglist_version", "v7"}, {"target", target}, {"history", history}};
}

std::string_view Query(const HttpRequest& r, std::string_view name) {
  for (const auto& [key, value] : r.query) {
    if (key == name) return value;
  }
  return {};
}

HttpResponse JsonResponse(const Json& doc) {
  return HttpResponse{.status = 200, .content_type = "application/json", .body = doc.dump()};
}

// The requests the page made, "path?name=value&..." (names sorted), in order.
// Written by the server's threads, read by the test.
class RequestLog {
 public:
  void Add(const HttpRequest& r) {
    std::string line = r.path;
    char sep = '?';
    for (const auto& [key, value] : r.query) {
      line += sep + key + "=" + value;
      sep = '&';
    }
    std::lock_guard lock(mu_);
    lines_.push_back(std::move(line));
  }
  std::vector<std::string> Lines() const {
    std::lock_guard lock(mu_);
    return lines_;
  }
  int Count(std::string_view prefix) const {
    int n = 0;
    for (const std::string& l : Lines()) n += l.starts_with(prefix) ? 1 : 0;
    return n;
  }

 private:
  mutable std::mutex mu_;
  std::vector<std::string> lines_;  // guarded by mu_
};

// The /api/v1 answers a test serves; by default the documents above. The
// pair route always serves Pair() for b over homa, and 404 otherwise.
struct CannedApi {
  // Answers /api/v1/matrix; `n` counts its calls from 0.
  std::function<HttpResponse(const HttpRequest&, int n)> matrix = [](const HttpRequest& r, int) {
    const std::string_view w = Query(r, "window");
    return JsonResponse(Matrix(w.empty() ? "1m" : w));
  };
  Json pinglist = Pinglist();
};

// ---- the page in Chromium ---------------------------------------------------

// One cell of the grid as the browser built it.
struct DomCell {
  std::string from;
  std::string to;
  std::string classes;  // the class attribute
  std::string text;     // its text, tags removed
};

// The value of attribute `name` in the opening tag `tag`, or nullopt.
std::optional<std::string> Attribute(std::string_view tag, std::string_view name) {
  const std::string key = " " + std::string(name) + "=\"";
  const size_t at = tag.find(key);
  if (at == std::string_view::npos) return std::nullopt;
  const size_t start = at + key.size();
  return std::string(tag.substr(start, tag.find('"', start) - start));
}

std::string TextOf(std::string_view html) {
  std::string text;
  bool in_tag = false;
  for (char c : html) {
    if (c == '<') in_tag = true;
    if (!in_tag) text += c;
    if (c == '>') in_tag = false;
  }
  return text;
}

// Every <td> carrying data-from, in document order. The DOM Chromium dumps
// quotes every attribute and escapes '"', '<' and '>' inside values, so an
// opening tag ends at the first '>'.
std::vector<DomCell> GridCells(std::string_view dom) {
  std::vector<DomCell> cells;
  for (size_t at = dom.find("<td "); at != std::string_view::npos; at = dom.find("<td ", at + 1)) {
    const size_t tag_end = dom.find('>', at);
    const size_t close = dom.find("</td>", tag_end);
    if (tag_end == std::string_view::npos || close == std::string_view::npos) break;
    const std::string_view tag = dom.substr(at, tag_end - at);
    std::optional<std::string> from = Attribute(tag, "data-from");
    if (!from.has_value()) continue;
    cells.push_back(DomCell{.from = *from,
                            .to = Attribute(tag, "data-to").value_or(""),
                            .classes = Attribute(tag, "class").value_or(""),
                            .text = TextOf(dom.substr(tag_end + 1, close - tag_end - 1))});
  }
  return cells;
}

// The one cell from -> to; fails the test unless there is exactly one.
DomCell CellAt(const std::vector<DomCell>& cells, std::string_view from, std::string_view to) {
  std::vector<DomCell> found;
  for (const DomCell& c : cells) {
    if (c.from == from && c.to == to) found.push_back(c);
  }
  EXPECT_EQ(found.size(), 1u) << from << " -> " << to;
  return found.empty() ? DomCell{} : found.front();
}

// The opening tag of the element with id `id`, or "".
std::string TagWithId(std::string_view dom, std::string_view id) {
  const size_t at = dom.find(" id=\"" + std::string(id) + "\"");
  if (at == std::string_view::npos) return "";
  const size_t start = dom.rfind('<', at);
  return std::string(dom.substr(start, dom.find('>', at) - start + 1));
}

// The text of the element with id `id` up to its first child's end tag:
// enough for the header's <dd>s and the banner's spans.
std::string TextWithId(std::string_view dom, std::string_view id) {
  const std::string tag = TagWithId(dom, id);
  if (tag.empty()) return "";
  const size_t start = dom.find(tag) + tag.size();
  return TextOf(dom.substr(start, dom.find("</", start) - start));
}

std::filesystem::path ArtifactDirectory() {
  for (const char* name : {"WHARF_TEST_ARTIFACTS", "TMPDIR"}) {
    const char* dir = std::getenv(name);
    if (dir != nullptr && *dir != '\0') return dir;
  }
  return "/tmp";
}

class DashboardPageTest : public ::testing::Test {
 protected:
  // Serves the page at "/" and `api` under /api/v1 on 127.0.0.1.
  void Serve(CannedApi api = {}) {
    Result<transport::NetAddress> listen = transport::NetAddress::Parse("127.0.0.1:0");
    ASSERT_TRUE(listen.ok()) << listen.status().ToString();
    HttpServerOptions options;
    options.listen = *listen;
    RequestLog* log = &log_;
    auto matrix_calls = std::make_shared<std::atomic<int>>(0);  // shared by copies of the handler
    std::vector<std::pair<std::string, HttpHandler>> routes;
    routes.emplace_back("/", [log](const HttpRequest& r) {
      log->Add(r);
      if (r.path == "/console-probe") {
        // A page that logs and throws, so that the console test can show
        // its detector sees both.
        return HttpResponse{.status = 200,
                            .content_type = "text/html; charset=utf-8",
                            .body =
                                "<!DOCTYPE html><title>probe</title><link rel=\"icon\" "
                                "href=\"data:,\"><script>console.warn('probe warning');"
                                "undefinedProbeFunction();</script>"};
      }
      if (r.path != "/" && r.path != "/index.html") return HttpResponse{.status = 404};
      return HttpResponse{.status = 200,
                          .content_type = "text/html; charset=utf-8",
                          .body = std::string(DashboardHtml())};
    });
    routes.emplace_back("/api/v1/matrix",
                        [log, matrix = api.matrix, matrix_calls](const HttpRequest& r) {
                          log->Add(r);
                          return matrix(r, matrix_calls->fetch_add(1));
                        });
    routes.emplace_back("/api/v1/pinglist", [log, doc = api.pinglist](const HttpRequest& r) {
      log->Add(r);
      return JsonResponse(doc);
    });
    routes.emplace_back("/api/v1/pair", [log](const HttpRequest& r) {
      log->Add(r);
      if (Query(r, "host") != "b" || Query(r, "transport") != "homa") {
        return HttpResponse{.status = 404, .body = "no such target\n"};
      }
      return JsonResponse(Pair());
    });
    Result<std::unique_ptr<HttpServer>> server = HttpServer::Start(options, std::move(routes));
    ASSERT_TRUE(server.ok()) << server.status().ToString();
    server_ = std::move(*server);
  }

  std::string Url(std::string_view path_and_query) const {
    return "http://" + server_->address().ToString() + std::string(path_and_query);
  }

  // Loads the page with `path_and_query` and returns the DOM it built;
  // `log` (optional) gets Chromium's log.
  std::string DumpDom(std::string_view path_and_query, std::string* log = nullptr,
                      int virtual_time_budget_ms = 5000) {
    testing::ChromiumRun run{.url = Url(path_and_query),
                             .switches = {"--dump-dom"},
                             .virtual_time_budget_ms = virtual_time_budget_ms};
    Result<testing::ChromiumOutput> out = testing::RunHeadlessChromium(run);
    EXPECT_TRUE(out.ok()) << out.status().ToString();
    if (!out.ok()) return "";
    EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
    if (log != nullptr) *log = out->stderr_text;
    return out->stdout_text;
  }

  RequestLog log_;
  std::unique_ptr<HttpServer> server_;
};

TEST_F(DashboardPageTest, DrawsOneColouredCellPerProbedPairOfEachRow) {
  Serve();
  std::string log;
  const std::string dom = DumpDom("/", &log);
  ASSERT_THAT(dom, HasSubstr("</html>"));

  // Rows a and b (the sources, in the order of hosts), columns a, b, c.
  const std::vector<DomCell> cells = GridCells(dom);
  ASSERT_EQ(cells.size(), 6u) << dom;
  // The default view: p50 over the first transport (homa).
  const DomCell ab = CellAt(cells, "a", "b");
  EXPECT_THAT(ab.classes, HasSubstr("cell-good"));
  EXPECT_THAT(ab.text, HasSubstr("50 µs"));
  EXPECT_THAT(ab.text, HasSubstr("3s ago"));
  const DomCell ac = CellAt(cells, "a", "c");
  EXPECT_THAT(ac.classes, HasSubstr("cell-failed"));
  EXPECT_THAT(ac.text, HasSubstr("failed"));
  const DomCell ba = CellAt(cells, "b", "a");
  EXPECT_THAT(ba.classes, HasSubstr("cell-bad"));  // 2.5 ms: orange
  EXPECT_THAT(ba.text, HasSubstr("2.50 ms"));
  EXPECT_THAT(ba.text, HasSubstr("2s ago"));
  const DomCell bc = CellAt(cells, "b", "c");
  EXPECT_THAT(bc.classes, HasSubstr("cell-nodata"));
  EXPECT_THAT(bc.text, HasSubstr("no data"));
  EXPECT_THAT(bc.classes, Not(HasSubstr("cell-failed")));
  EXPECT_THAT(ac.classes, Not(HasSubstr("cell-nodata")));
  EXPECT_THAT(CellAt(cells, "a", "a").classes, HasSubstr("cell-blank"));
  EXPECT_THAT(CellAt(cells, "b", "b").classes, HasSubstr("cell-blank"));
  // Only self's row opens a drill-down here.
  EXPECT_THAT(ab.classes, HasSubstr("cell-link"));
  EXPECT_THAT(ac.classes, HasSubstr("cell-link"));
  EXPECT_THAT(ba.classes, Not(HasSubstr("cell-link")));

  EXPECT_EQ(TextWithId(dom, "self"), "a");
  EXPECT_EQ(TextWithId(dom, "version"), "v7");
  EXPECT_EQ(TextWithId(dom, "shown-window"), "1m");
  EXPECT_NE(TextWithId(dom, "refreshed"), "never");
  EXPECT_THAT(TagWithId(dom, "banner"), HasSubstr(" hidden"));
  EXPECT_THAT(TagWithId(dom, "pair"), HasSubstr(" hidden"));
  EXPECT_GE(log_.Count("/api/v1/matrix?window=1m"), 1);
  EXPECT_GE(log_.Count("/api/v1/pinglist"), 1);
  EXPECT_THAT(testing::ConsoleLines(log), IsEmpty());
}

TEST_F(DashboardPageTest, ColoursTheMetricTheQueryAsks) {
  Serve();
  // p99: a->b 150 us is yellow, b->a 25 ms red.
  const std::vector<DomCell> p99 = GridCells(DumpDom("/?metric=p99&transport=homa"));
  ASSERT_EQ(p99.size(), 6u);
  EXPECT_THAT(CellAt(p99, "a", "b").classes, HasSubstr("cell-warn"));
  EXPECT_THAT(CellAt(p99, "a", "b").text, HasSubstr("150 µs"));
  EXPECT_THAT(CellAt(p99, "b", "a").classes, HasSubstr("cell-severe"));
  EXPECT_THAT(CellAt(p99, "b", "a").text, HasSubstr("25.0 ms"));

  // Loss: none is green, 5% orange; failed and no data keep their own class.
  const std::vector<DomCell> loss = GridCells(DumpDom("/?metric=loss&transport=homa"));
  ASSERT_EQ(loss.size(), 6u);
  EXPECT_THAT(CellAt(loss, "a", "b").classes, HasSubstr("cell-good"));
  EXPECT_THAT(CellAt(loss, "a", "b").text, HasSubstr("0%"));
  EXPECT_THAT(CellAt(loss, "b", "a").classes, HasSubstr("cell-bad"));
  EXPECT_THAT(CellAt(loss, "b", "a").text, HasSubstr("5.0%"));
  EXPECT_THAT(CellAt(loss, "a", "c").classes, HasSubstr("cell-failed"));
  EXPECT_THAT(CellAt(loss, "b", "c").classes, HasSubstr("cell-nodata"));

  // The applications' own p99: a->b 3 ms is orange; a->c, whose probes
  // all failed, had its calls unanswered; b->a and b->c saw no traffic.
  const std::vector<DomCell> apps = GridCells(DumpDom("/?metric=app99&transport=homa"));
  ASSERT_EQ(apps.size(), 6u);
  EXPECT_THAT(CellAt(apps, "a", "b").classes, HasSubstr("cell-bad"));
  EXPECT_THAT(CellAt(apps, "a", "b").text, HasSubstr("3.00 ms"));
  EXPECT_THAT(CellAt(apps, "a", "c").classes, HasSubstr("cell-failed"));
  EXPECT_THAT(CellAt(apps, "b", "a").classes, HasSubstr("cell-nodata"));
  EXPECT_THAT(CellAt(apps, "b", "a").text, HasSubstr("no traffic"));
}

TEST_F(DashboardPageTest, ShowsTheTransportAndWindowTheQueryAsks) {
  Serve();
  const std::string dom = DumpDom("/?transport=tcp&window=10s");
  const std::vector<DomCell> cells = GridCells(dom);
  ASSERT_EQ(cells.size(), 6u) << dom;
  // Over tcp only a->c is probed: 800 us, yellow; the rest is blank.
  EXPECT_THAT(CellAt(cells, "a", "c").classes, HasSubstr("cell-warn"));
  EXPECT_THAT(CellAt(cells, "a", "c").text, HasSubstr("800 µs"));
  for (const auto& [from, to] : {std::pair{"a", "b"}, {"b", "a"}, {"b", "c"}}) {
    EXPECT_THAT(CellAt(cells, from, to).classes, HasSubstr("cell-blank")) << from << to;
  }
  // Every transport present is offered.
  EXPECT_THAT(dom, HasSubstr("<option value=\"homa\">homa</option>"));
  EXPECT_THAT(dom, HasSubstr("<option value=\"tcp\">tcp</option>"));
  EXPECT_EQ(TextWithId(dom, "shown-window"), "10s");
  EXPECT_GE(log_.Count("/api/v1/matrix?window=10s"), 1);
  EXPECT_EQ(log_.Count("/api/v1/matrix?window=1m"), 0);
}

TEST_F(DashboardPageTest, DrillDownDrawsThePairsHistory) {
  Serve();
  const std::string dom = DumpDom("/?pair=b");
  EXPECT_GE(log_.Count("/api/v1/pair?host=b&transport=homa"), 1);
  EXPECT_THAT(TagWithId(dom, "pair"), Not(HasSubstr("hidden")));
  EXPECT_THAT(TextWithId(dom, "pair-title"), HasSubstr("a → b over homa"));
  EXPECT_THAT(TextWithId(dom, "pair-status"), HasSubstr("60 points"));
  EXPECT_THAT(dom, HasSubstr("<path class=\"line-p50\" d=\"M"));
  EXPECT_THAT(dom, HasSubstr("<path class=\"line-p99\" d=\"M"));
  EXPECT_THAT(dom, HasSubstr("<rect class=\"loss-bar\""));
  // The silent point breaks each line: two "M" segments.
  const size_t p50 = dom.find("<path class=\"line-p50\"");
  const std::string p50_d = dom.substr(p50, dom.find('>', p50) - p50);
  EXPECT_EQ(std::count(p50_d.begin(), p50_d.end(), 'M'), 2) << p50_d;
  // The target's counters and windows.
  EXPECT_THAT(dom, HasSubstr("<th scope=\"row\">sent</th><td>600</td>"));
  EXPECT_THAT(dom, HasSubstr("homa://10.0.0.2:4000"));
  // Its class, and which clock timed its probes.
  EXPECT_THAT(dom, HasSubstr("<th scope=\"row\">priority</th><td>5 (DSCP 40)</td>"));
  EXPECT_THAT(dom, HasSubstr("<th scope=\"row\">timed by</th><td>send kernel, receive mixed</td>"));
  // Beside the probes' windows, the applications' own round trips.
  EXPECT_THAT(dom, HasSubstr("<th scope=\"col\">apps p99</th>"));
  EXPECT_THAT(dom, HasSubstr("<td>4321</td><td>70 µs</td><td>3.00 ms</td>"));
  // The opened cell is marked.
  EXPECT_THAT(CellAt(GridCells(dom), "a", "b").classes, HasSubstr("selected"));
  EXPECT_THAT(TagWithId(dom, "banner"), HasSubstr(" hidden"));
}

TEST_F(DashboardPageTest, KeepsStringsFromTheJsonAsText) {
  CannedApi api;
  api.matrix = [](const HttpRequest&, int) {
    Json doc = Matrix("1m");
    doc["self"] = "<i class=injected>a</i>";
    doc["hosts"] = {"<i class=injected>a</i>", "b&amp;", "c"};
    for (Json& c : doc["cells"]) {
      if (c["from"] == "a") c["from"] = "<i class=injected>a</i>";
      if (c["to"] == "a") c["to"] = "<i class=injected>a</i>";
      if (c["to"] == "b") c["to"] = "b&amp;";
      c["transport"] = "<i class=injected>homa</i>";
    }
    return JsonResponse(doc);
  };
  api.pinglist["version"] = "<i class=injected>v7</i>";
  Serve(std::move(api));
  std::string log;
  const std::string dom = DumpDom("/", &log);
  ASSERT_THAT(dom, HasSubstr("</html>"));
  // Had any of them been parsed as markup, an <i> element would serialize
  // with a quoted class.
  EXPECT_THAT(dom, Not(HasSubstr("class=\"injected\"")));
  EXPECT_THAT(TextWithId(dom, "self"), HasSubstr("&lt;i class=injected&gt;a&lt;/i&gt;"));
  EXPECT_THAT(TextWithId(dom, "version"), HasSubstr("&lt;i class=injected&gt;v7"));
  EXPECT_THAT(dom, HasSubstr("<th scope=\"col\">b&amp;amp;</th>"));
  EXPECT_EQ(GridCells(dom).size(), 6u);
  EXPECT_THAT(testing::ConsoleLines(log), IsEmpty());
}

// A collector's matrix: no self, a list of sources, and the row of a
// source that stopped answering in state "unreachable".
TEST_F(DashboardPageTest, ACollectorsDownSourceIsShownDown) {
  CannedApi api;
  api.matrix = [](const HttpRequest&, int) {
    Json doc = Matrix("1m");
    doc["self"] = nullptr;
    doc["sources"] = Json::array({Json{{"url", "http://a:4002"}, {"name", "a"}, {"reachable", true}},
                                  Json{{"url", "http://b:4002"}, {"name", "b"}, {"reachable", false}}});
    for (Json& c : doc["cells"]) {
      if (c["from"] == "b") c["state"] = "unreachable";
    }
    return JsonResponse(doc);
  };
  Serve(std::move(api));
  std::string log;
  const std::string dom = DumpDom("/", &log);
  const std::vector<DomCell> cells = GridCells(dom);
  ASSERT_EQ(cells.size(), 6u) << dom;
  EXPECT_THAT(CellAt(cells, "b", "a").classes, HasSubstr("cell-down"));
  EXPECT_THAT(CellAt(cells, "b", "a").text, HasSubstr("down"));
  EXPECT_THAT(CellAt(cells, "a", "b").classes, HasSubstr("cell-good"));
  EXPECT_EQ(TextWithId(dom, "self"), "collector of 2 daemons");
  EXPECT_THAT(testing::ConsoleLines(log), IsEmpty());
}

TEST_F(DashboardPageTest, ShowsABannerWhenTheApiFailsAndKeepsRetrying) {
  CannedApi api;
  api.matrix = [](const HttpRequest&, int) {
    return HttpResponse{.status = 503, .body = "wharfd's loop did not answer within 2 s\n"};
  };
  Serve(std::move(api));
  // 12 s of page time: the first refresh and two retries, 5 s apart.
  const std::string dom = DumpDom("/", nullptr, 12000);
  EXPECT_THAT(TagWithId(dom, "banner"), Not(HasSubstr("hidden")));
  const std::string banner = TextWithId(dom, "banner-text");
  EXPECT_THAT(banner, HasSubstr("api/v1/matrix?window=1m: HTTP 503"));
  EXPECT_THAT(banner, HasSubstr("did not answer within 2 s"));
  EXPECT_THAT(TextWithId(dom, "banner-retry"), HasSubstr("Retrying every 5 s"));
  EXPECT_EQ(GridCells(dom).size(), 0u);
  EXPECT_GE(log_.Count("/api/v1/matrix"), 3);
}

TEST_F(DashboardPageTest, RecoversWhenTheApiAnswersAgain) {
  CannedApi api;
  api.matrix = [](const HttpRequest&, int n) {
    if (n == 0) return HttpResponse{.status = 503, .body = "not yet\n"};
    return JsonResponse(Matrix("1m"));
  };
  Serve(std::move(api));
  const std::string dom = DumpDom("/", nullptr, 8000);
  EXPECT_GE(log_.Count("/api/v1/matrix"), 2);
  EXPECT_THAT(TagWithId(dom, "banner"), HasSubstr(" hidden"));
  EXPECT_EQ(GridCells(dom).size(), 6u);
}

TEST_F(DashboardPageTest, PrintsNothingToTheConsole) {
  Serve();
  // The detector first: a page that warns and throws is caught.
  std::string probe_log;
  DumpDom("/console-probe", &probe_log, 1000);
  const std::vector<std::string> probe_lines = testing::ConsoleLines(probe_log);
  ASSERT_EQ(probe_lines.size(), 2u) << probe_log;
  EXPECT_THAT(probe_lines[0], HasSubstr("probe warning"));
  EXPECT_THAT(probe_lines[1], HasSubstr("Uncaught ReferenceError: undefinedProbeFunction"));

  // The page at its busiest: the grid with nulls in many cells, two
  // refreshes, the drill-down open.
  std::string log;
  const std::string dom = DumpDom("/?pair=b&metric=loss", &log, 6000);
  ASSERT_EQ(GridCells(dom).size(), 6u);
  EXPECT_THAT(testing::ConsoleLines(log), IsEmpty()) << log;
  EXPECT_GE(log_.Count("/api/v1/matrix"), 2);
}

TEST_F(DashboardPageTest, LeavesAScreenshot) {
  Serve();
  const std::filesystem::path dir = ArtifactDirectory();
  std::filesystem::create_directories(dir);
  const std::filesystem::path png = dir / "mesh-dashboard.png";
  std::filesystem::remove(png);
  Result<testing::ChromiumOutput> out = testing::RunHeadlessChromium(
      {.url = Url("/?pair=b"),
       .switches = {"--screenshot=" + png.string(), "--window-size=1200,800"}});
  ASSERT_TRUE(out.ok()) << out.status().ToString();
  EXPECT_EQ(out->exit_code, 0) << out->stderr_text;
  ASSERT_TRUE(std::filesystem::exists(png)) << out->stderr_text;
  EXPECT_GT(std::filesystem::file_size(png), 10u * 1024) << png;
  std::cout << "[ artifact ] " << png.string() << "\n";
}

// ---- the Chromium runner ----------------------------------------------------

TEST(DashboardChromiumTest, AMissingBrowserFailsNamingThePackage) {
  Result<testing::ChromiumOutput> out =
      testing::RunHeadlessChromium({.url = "about:blank", .binary = "/nonexistent/chromium"});
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kFailedPrecondition);
  EXPECT_THAT(out.status().message(), HasSubstr("Debian package `chromium`"));
}

TEST(DashboardChromiumTest, ARunOverItsTimeIsKilledWithAllItStarted) {
  // A directory of this test's own, so that no other run's processes count.
  const std::filesystem::path parent = std::filesystem::path(::testing::TempDir()) /
                                       ("dashboard-timeout-" + std::to_string(::getpid()));
  std::filesystem::create_directories(parent);
  const TimeNs start = SystemClock::Get().NowNs();
  // Given nothing to dump, headless Chromium runs until killed; in 3 s it
  // has started its zygotes, renderers and crash handlers.
  Result<testing::ChromiumOutput> out =
      testing::RunHeadlessChromium({.url = "about:blank",
                                    .virtual_time_budget_ms = 0,
                                    .timeout = 3 * kNsPerSec,
                                    .temp_parent = parent.string()});
  const DurationNs took = SystemClock::Get().NowNs() - start;
  ASSERT_FALSE(out.ok());
  EXPECT_EQ(out.status().code(), StatusCode::kDeadlineExceeded) << out.status().ToString();
  EXPECT_LT(took, 15 * kNsPerSec);
  EXPECT_THAT(testing::ProcessesMentioning(parent.string()), IsEmpty());
  EXPECT_TRUE(std::filesystem::is_empty(parent)) << "the run's directory is removed";
  std::filesystem::remove_all(parent);
}

}  // namespace
}  // namespace wharf::mesh
