// `wharf mesh` and `wharf mesh collect`: flags, signals and output over
// src/mesh's fetching, merging, table and collector.
#include "tools/mesh_command.h"

#include <pthread.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <csignal>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/config_value.h"
#include "mesh/cluster_matrix.h"
#include "mesh/collector.h"
#include "mesh/collector_http.h"
#include "mesh/http_client.h"
#include "mesh/http_server.h"
#include "mesh/matrix_text.h"

namespace wharf::tools {
namespace {

constexpr const char* kDefaultSource = "http://127.0.0.1:4002";
constexpr DurationNs kMaxTimeout = 60 * kNsPerSec;
constexpr DurationNs kMinInterval = 100 * kNsPerMs;
// What a bad --from or duration exits with (CLI11 has its own codes for
// the flags it checks).
constexpr int kExitBadFlags = 2;

// "2s" -> ns within [min, max]; the error names the flag.
Result<DurationNs> ParseFlagDuration(const char* flag, const std::string& text, DurationNs min,
                                     DurationNs max) {
  Result<DurationNs> d = ParseDuration(text);
  if (!d.ok()) return d.status().WithContext(flag);
  if (*d < min || *d > max) {
    return InvalidArgumentError(std::string(flag) + " '" + text + "': out of range");
  }
  return d;
}

// Each --from written out (http://host:port), or the first bad one's error.
Result<std::vector<std::string>> SourceUrls(const std::vector<std::string>& from) {
  std::vector<std::string> urls;
  for (const std::string& f : from) {
    Result<std::string> url = mesh::NormalizeHttpUrl(f);
    if (!url.ok()) return url.status().WithContext("--from");
    bool seen = false;
    for (const std::string& u : urls) seen |= u == *url;
    if (!seen) urls.push_back(*url);
  }
  return urls;
}

mesh::FetchFunction RealFetch() {
  return [](const std::string& url, const std::string& path, DurationNs timeout) {
    return mesh::HttpGet(url, path, timeout);
  };
}

// Colour when stdout is a terminal that can show it and NO_COLOR is unset
// (https://no-color.org).
bool UseColour() {
  if (::isatty(STDOUT_FILENO) != 1 || std::getenv("NO_COLOR") != nullptr) return false;
  const char* term = std::getenv("TERM");
  return term == nullptr || std::string(term) != "dumb";
}

int RunShow(const MeshShowOptions& o) {
  Result<mesh::Metric> metric = mesh::ParseMetric(o.metric);
  Result<DurationNs> timeout = ParseFlagDuration("--timeout", o.timeout, kNsPerMs, kMaxTimeout);
  Result<std::vector<std::string>> urls =
      SourceUrls(o.from.empty() ? std::vector<std::string>{kDefaultSource} : o.from);
  for (const Status& s : {metric.status(), timeout.status(), urls.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "wharf mesh: %s\n", s.message().c_str());
      return kExitBadFlags;
    }
  }
  const Clock& clock = SystemClock::Get();
  std::vector<mesh::SourceFetch> fetched =
      mesh::FetchMatrices(*urls, o.window, *timeout, RealFetch(), clock);
  const mesh::ClusterMatrix merged = mesh::Merge(o.window, fetched, clock.NowNs());
  size_t answered = 0;
  for (const mesh::SourceState& s : merged.sources) answered += s.reachable;
  if (answered == 0) {
    std::fprintf(stderr, "wharf mesh: no source answered:\n");
    for (const mesh::SourceState& s : merged.sources) {
      std::fprintf(stderr, "  %s\n", s.error.c_str());
    }
    std::fprintf(stderr,
                 "Is wharfd running with http.listen set, and mesh.pinglist? (--from names "
                 "its http.listen address; the default is %s)\n",
                 kDefaultSource);
    return 1;
  }
  if (o.json) {
    std::printf("%s\n", mesh::RenderClusterMatrixJson(merged).c_str());
  } else {
    std::fputs(mesh::RenderMatrixText(merged, *metric, o.transport, UseColour()).c_str(), stdout);
  }
  return 0;
}

// On a terminal, one line per round on stderr.
void PrintRound(const mesh::CollectorRound& r) {
  std::string line = "round " + std::to_string(r.number) + ": " + std::to_string(r.answered) + "/" +
                     std::to_string(r.sources) + " sources answered in " +
                     std::to_string(r.took_ns / kNsPerMs) + " ms";
  for (const std::string& f : r.failures) line += "; " + f;
  std::fprintf(stderr, "%s\n", line.c_str());
}

int RunCollect(const MeshCollectOptions& o) {
  Result<DurationNs> timeout = ParseFlagDuration("--timeout", o.timeout, kNsPerMs, kMaxTimeout);
  Result<DurationNs> interval =
      ParseFlagDuration("--interval", o.interval, kMinInterval, 3600 * kNsPerSec);
  Result<std::vector<std::string>> urls = SourceUrls(o.from);
  for (const Status& s : {timeout.status(), interval.status(), urls.status()}) {
    if (!s.ok()) {
      std::fprintf(stderr, "wharf mesh collect: %s\n", s.message().c_str());
      return kExitBadFlags;
    }
  }

  // Signals are taken by this thread with sigwait, blocked in every thread
  // started from here on (the collector's, the HTTP server's).
  sigset_t signals;
  sigemptyset(&signals);
  sigaddset(&signals, SIGINT);
  sigaddset(&signals, SIGTERM);
  pthread_sigmask(SIG_BLOCK, &signals, nullptr);
  std::signal(SIGPIPE, SIG_IGN);

  mesh::CollectorOptions options;
  options.sources = *urls;
  options.interval = *interval;
  options.fetch_timeout = *timeout;
  if (::isatty(STDERR_FILENO) == 1) options.on_round = PrintRound;
  auto collector = mesh::Collector::Create(std::move(options), SystemClock::Get(), RealFetch());
  if (!collector.ok()) {
    std::fprintf(stderr, "wharf mesh collect: %s\n", collector.status().message().c_str());
    return kExitBadFlags;
  }
  auto server = mesh::StartCollectorHttp(o.listen, collector->get(), o.window);
  if (!server.ok()) {
    std::fprintf(stderr, "wharf mesh collect: %s\n", server.status().ToString().c_str());
    return 1;
  }
  (*collector)->Start();
  std::fprintf(stderr,
               "wharf mesh collect: %zu sources every %s; dashboard on http://%s/ "
               "(/api/v1/matrix?window=10s|1m|10m, /api/v1/sources). Ctrl-C stops.\n",
               urls->size(), o.interval.c_str(), (*server)->address().ToString().c_str());
  int sig = 0;
  sigwait(&signals, &sig);
  // The pages read the collector: stop them first.
  server->reset();
  (*collector)->Stop();
  return 0;
}

}  // namespace

CLI::App* AddMeshCommand(CLI::App& app, MeshOptions& options) {
  CLI::App* mesh = app.add_subcommand(
      "mesh", "The mesh's latency matrix, from each wharfd's /api/v1/matrix; `collect` serves it");
  mesh->footer(
      "Rows are sources, columns destinations; each wharfd serves its own row on its "
      "http.listen. Exit 0 when a source answered, 1 when none did; another code for bad flags.\n"
      "Examples:\n"
      "  wharf mesh\n"
      "  wharf mesh --from 10.0.0.1:4002 --from 10.0.0.2:4002 --metric p99 --transport tcp\n"
      "  wharf mesh collect --from 10.0.0.1:4002,10.0.0.2:4002 --listen 0.0.0.0:4010");
  mesh->require_subcommand(0, 1);
  MeshShowOptions& s = options.show;
  mesh->add_option("--from", s.from,
                   "A wharfd's HTTP address (http://HOST:PORT or HOST:PORT; repeat, or a "
                   "comma-separated list; default http://127.0.0.1:4002)")
      ->delimiter(',');
  mesh->add_option("--window", s.window, "The window: 10s, 1m or 10m")
      ->capture_default_str()
      ->check(CLI::IsMember({"10s", "1m", "10m"}));
  mesh->add_option("--metric", s.metric,
                   "What cells show: p50, p99 (round trip), loss, network_p50, network_p99 "
                   "(round trip less the answerer's own time), app_p50, app_p99 (the "
                   "applications' own calls and messages on the pair, no probes)")
      ->capture_default_str()
      ->check(CLI::IsMember(
          {"p50", "p99", "loss", "network_p50", "network_p99", "app_p50", "app_p99"}));
  mesh->add_option("--transport", s.transport,
                   "Whose cells: homa or tcp (default: the first the cells have)")
      ->check(CLI::IsMember({"homa", "tcp"}));
  mesh->add_flag("--json", s.json,
                 "Print the merged matrix as JSON (a wharfd's /api/v1/matrix plus \"sources\")");
  mesh->add_option("--timeout", s.timeout, "Per source, to connect and to answer (e.g. 500ms, 2s)")
      ->capture_default_str();

  CLI::App* collect = mesh->add_subcommand(
      "collect", "Keep fetching every --from's matrix; serve the merged one and the dashboard");
  collect->footer(
      "Every --interval, each source's matrix in all three windows (a source that does not "
      "answer within --timeout is marked unreachable: its row's cells \"unreachable\", with "
      "its error and the age of its last good data). Serves until SIGINT/SIGTERM: / (the "
      "dashboard), /api/v1/matrix?window=10s|1m|10m, /api/v1/sources, /api/v1/pinglist. On a "
      "terminal, one line per round on stderr.\n"
      "Example:\n"
      "  wharf mesh collect --from 10.0.0.1:4002 --from 10.0.0.2:4002 --listen 0.0.0.0:4010");
  options.collect_command = collect;
  MeshCollectOptions& c = options.collect;
  collect
      ->add_option("--from", c.from,
                   "A wharfd's HTTP address (http://HOST:PORT or HOST:PORT; repeat, or a "
                   "comma-separated list)")
      ->delimiter(',')
      ->required();
  collect->add_option("--listen", c.listen, "Where to serve (numeric IP:PORT)")
      ->capture_default_str();
  collect->add_option("--interval", c.interval, "Between rounds (at least 100ms)")
      ->capture_default_str();
  collect->add_option("--window", c.window, "The window of requests without ?window=")
      ->capture_default_str()
      ->check(CLI::IsMember({"10s", "1m", "10m"}));
  collect->add_option("--timeout", c.timeout, "Per fetch, to connect and to answer")
      ->capture_default_str();
  return mesh;
}

int RunMesh(const MeshOptions& options) {
  if (options.collect_command != nullptr && options.collect_command->parsed()) {
    return RunCollect(options.collect);
  }
  return RunShow(options.show);
}

}  // namespace wharf::tools
