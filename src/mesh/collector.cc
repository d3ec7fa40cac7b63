// Collector: rounds of fetches, what they leave per source and window, and
// the thread that runs them.
#include "mesh/collector.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <utility>

namespace wharf::mesh {
namespace {

constexpr int kMaxParallel = 64;
constexpr std::string_view kMatrixPath = "/api/v1/matrix?window=";

// A source whose first fetch of a round failed like this is not asked for
// the other windows: it would fail them too, a timeout each.
bool SourceIsDown(const Status& s) {
  return s.code() == StatusCode::kUnavailable || s.code() == StatusCode::kDeadlineExceeded;
}

// Calls fn(i) for every i in [0, n), on up to `workers` threads (on this
// one when 1); returns when all are done.
void ParallelFor(size_t n, int workers, const std::function<void(size_t)>& fn) {
  const size_t threads_wanted = std::min<size_t>(static_cast<size_t>(std::max(workers, 1)), n);
  if (threads_wanted <= 1) {
    for (size_t i = 0; i < n; ++i) fn(i);
    return;
  }
  std::atomic<size_t> next{0};
  std::vector<std::thread> threads;
  threads.reserve(threads_wanted);
  for (size_t t = 0; t < threads_wanted; ++t) {
    threads.emplace_back([&] {
      for (size_t i = next++; i < n; i = next++) fn(i);
    });
  }
  for (std::thread& t : threads) t.join();
}

Result<DaemonMatrix> FetchMatrix(const FetchFunction& fetch, const std::string& url,
                                 std::string_view window, DurationNs timeout) {
  const std::string path = std::string(kMatrixPath) + std::string(window);
  WHARF_ASSIGN_OR_RETURN(std::string body, fetch(url, path, timeout));
  Result<DaemonMatrix> matrix = ParseMatrixJson(body);
  if (!matrix.ok()) return matrix.status().WithContext("GET " + url + path);
  return matrix;
}

}  // namespace

std::vector<SourceFetch> FetchMatrices(const std::vector<std::string>& urls,
                                       std::string_view window, DurationNs timeout,
                                       const FetchFunction& fetch, const Clock& clock,
                                       int parallel) {
  const TimeNs start_ns = clock.NowNs();
  std::vector<SourceFetch> out(urls.size());
  ParallelFor(urls.size(), std::min(parallel, kMaxParallel), [&](size_t i) {
    SourceFetch& f = out[i];
    f.url = urls[i];
    Result<DaemonMatrix> m = FetchMatrix(fetch, urls[i], window, timeout);
    f.reachable = m.ok();
    if (m.ok()) {
      f.matrix = std::move(m).value();
      f.fetched_ns = start_ns;
    } else {
      f.error = m.status().message();
    }
  });
  return out;
}

Result<std::unique_ptr<Collector>> Collector::Create(CollectorOptions options, const Clock& clock,
                                                     FetchFunction fetch) {
  if (options.sources.empty()) return InvalidArgumentError("collector: no sources");
  for (size_t i = 0; i < options.sources.size(); ++i) {
    if (options.sources[i].empty()) return InvalidArgumentError("collector: an empty source URL");
    for (size_t j = 0; j < i; ++j) {
      if (options.sources[i] == options.sources[j]) {
        return InvalidArgumentError("collector: source " + options.sources[i] + " given twice");
      }
    }
  }
  if (options.interval <= 0)
    return InvalidArgumentError("collector: the interval must be positive");
  if (options.fetch_timeout <= 0) {
    return InvalidArgumentError("collector: the fetch timeout must be positive");
  }
  if (options.parallel < 1 || options.parallel > kMaxParallel) {
    return InvalidArgumentError("collector: parallel fetches must be 1.." +
                                std::to_string(kMaxParallel));
  }
  if (!fetch) return InvalidArgumentError("collector: no fetch function");
  return std::unique_ptr<Collector>(new Collector(std::move(options), clock, std::move(fetch)));
}

Collector::Collector(CollectorOptions options, const Clock& clock, FetchFunction fetch)
    : options_(std::move(options)), clock_(clock), fetch_(std::move(fetch)) {
  MutexLock lock(mu_);
  for (const std::string& url : options_.sources) records_.push_back(SourceRecord{.url = url});
}

Collector::~Collector() { Stop(); }

std::vector<Result<DaemonMatrix>> Collector::FetchSource(const std::string& url) const {
  std::vector<Result<DaemonMatrix>> out;
  for (std::string_view window : kCollectorWindows) {
    if (!out.empty() && !out.front().ok() && SourceIsDown(out.front().status())) {
      out.push_back(out.front().status());
      continue;
    }
    out.push_back(FetchMatrix(fetch_, url, window, options_.fetch_timeout));
  }
  return out;
}

CollectorRound Collector::RunRound() {
  const TimeNs start_ns = clock_.NowNs();
  const size_t n = options_.sources.size();
  std::vector<std::vector<Result<DaemonMatrix>>> fetched(n);
  // Each call writes only its own slot.
  ParallelFor(n, options_.parallel,
              [&](size_t i) { fetched[i] = FetchSource(options_.sources[i]); });

  CollectorRound round;
  round.sources = n;
  MutexLock lock(mu_);
  for (size_t i = 0; i < n; ++i) {
    SourceRecord& record = records_[i];
    std::string first_error;
    for (size_t w = 0; w < kCollectorWindows.size(); ++w) {
      WindowRecord& r = record.windows[w];
      Result<DaemonMatrix>& got = fetched[i][w];
      r.reachable = got.ok();
      if (got.ok()) {
        r.error.clear();
        r.last_good = std::move(got).value();
        r.last_good_ns = start_ns;
      } else {
        r.error = got.status().message();
        if (first_error.empty()) first_error = r.error;
      }
    }
    if (first_error.empty()) {
      ++round.answered;
    } else {
      // The row's name as the tables show it: its last known self, or its URL.
      SourceState s{.url = record.url};
      for (const WindowRecord& r : record.windows) {
        if (r.last_good && !r.last_good->self.empty()) s.name = r.last_good->self;
      }
      round.failures.push_back(SourceRowName(s) + ": " + first_error);
    }
  }
  round.number = ++rounds_;
  round.took_ns = clock_.NowNs() - start_ns;
  return round;
}

Result<ClusterMatrix> Collector::Matrix(std::string_view window) const {
  const auto it = std::find(kCollectorWindows.begin(), kCollectorWindows.end(), window);
  if (it == kCollectorWindows.end()) {
    return InvalidArgumentError("window '" + std::string(window).substr(0, 32) +
                                "': expected 10s, 1m or 10m");
  }
  const auto w = static_cast<size_t>(it - kCollectorWindows.begin());
  std::vector<SourceFetch> fetches;
  {
    MutexLock lock(mu_);
    fetches.reserve(records_.size());
    for (const SourceRecord& record : records_) {
      const WindowRecord& r = record.windows[w];
      fetches.push_back(SourceFetch{.url = record.url,
                                    .reachable = r.reachable,
                                    .error = r.error,
                                    .fetched_ns = r.last_good_ns,
                                    .matrix = r.last_good});
    }
  }
  return Merge(window, fetches, clock_.NowNs());
}

uint64_t Collector::rounds() const {
  MutexLock lock(mu_);
  return rounds_;
}

void Collector::Start() {
  {
    MutexLock lock(mu_);
    if (thread_.joinable() || stopping_) return;
  }
  thread_ = std::thread([this] { Loop(); });
}

void Collector::Stop() {
  {
    MutexLock lock(mu_);
    stopping_ = true;
  }
  wake_.NotifyAll();
  if (thread_.joinable()) thread_.join();
}

void Collector::Loop() {
  TimeNs next_ns = clock_.NowNs();
  for (;;) {
    {
      MutexLock lock(mu_);
      if (stopping_) return;
    }
    const CollectorRound round = RunRound();
    if (options_.on_round) options_.on_round(round);
    next_ns = std::max(next_ns + options_.interval, clock_.NowNs());
    MutexLock lock(mu_);
    while (!stopping_) {
      const DurationNs left_ns = next_ns - clock_.NowNs();
      if (left_ns <= 0) break;
      // The clock is the system's monotonic one here; the wait only needs
      // its length.
      wake_.WaitUntil(mu_, CondVar::Clock::now() + std::chrono::nanoseconds(left_ns));
    }
  }
}

}  // namespace wharf::mesh
