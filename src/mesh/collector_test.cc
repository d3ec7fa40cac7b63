// collector_test.cc: Collector's rounds on a SimClock with a fake fetch
// function: a source shown unreachable after a failed round (with its last
// good data's age) and back after a good one, bad answers, the windows, the
// options; and its thread started and stopped.
#include "mesh/collector.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "base/mutex.h"
#include "base/sim_clock.h"
#include "mesh/testing/matrix_samples.h"

namespace wharf::mesh {
namespace {

using ::testing::ElementsAre;
using ::testing::HasSubstr;

constexpr const char* kA = "http://127.0.0.1:4102";
constexpr const char* kB = "http://127.0.0.1:4202";

// Answers per URL, set by the test; records every call. Thread-safe.
class FakeFetch {
 public:
  void Answer(const std::string& url, Result<std::string> body) {
    MutexLock lock(mu_);
    answers_.insert_or_assign(url, std::move(body));
  }
  std::vector<std::string> TakeCalls() {
    MutexLock lock(mu_);
    return std::exchange(calls_, {});
  }
  FetchFunction Function() {
    return [this](const std::string& url, const std::string& path, DurationNs timeout) {
      EXPECT_EQ(timeout, 2 * kNsPerSec);
      MutexLock lock(mu_);
      calls_.push_back(url + path);
      auto it = answers_.find(url);
      if (it == answers_.end()) return Result<std::string>(UnavailableError("no such source"));
      return it->second;
    };
  }

 private:
  Mutex mu_;
  std::map<std::string, Result<std::string>> answers_ ABSL_GUARDED_BY(mu_);
  std::vector<std::string> calls_ ABSL_GUARDED_BY(mu_);
};

CollectorOptions TwoSources() {
  CollectorOptions o;
  o.sources = {kA, kB};
  o.parallel = 1;
  return o;
}

class CollectorTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto c = Collector::Create(TwoSources(), clock_, fetch_.Function());
    ASSERT_TRUE(c.ok()) << c.status();
    collector_ = std::move(*c);
  }

  ClusterMatrix Matrix(std::string_view window = "1m") {
    Result<ClusterMatrix> m = collector_->Matrix(window);
    EXPECT_TRUE(m.ok()) << m.status();
    return m.ok() ? *m : ClusterMatrix{};
  }

  SimClock clock_{1000 * kNsPerSec};
  FakeFetch fetch_;
  std::unique_ptr<Collector> collector_;
};

TEST_F(CollectorTest, BeforeTheFirstRoundEverySourceIsUnreachable) {
  ClusterMatrix m = Matrix();
  ASSERT_EQ(m.sources.size(), 2u);
  for (const SourceState& s : m.sources) {
    EXPECT_FALSE(s.reachable);
    EXPECT_EQ(s.error, "no answer yet");
    EXPECT_EQ(s.fetched_ns, 0);
  }
  EXPECT_EQ(collector_->rounds(), 0u);
}

TEST_F(CollectorTest, ASourceIsDownAfterAFailedRoundAndBackAfterAGoodOne) {
  fetch_.Answer(kA, std::string(testing::kMatrixA));
  fetch_.Answer(kB, std::string(testing::kMatrixB));
  CollectorRound r1 = collector_->RunRound();
  EXPECT_EQ(r1.number, 1u);
  EXPECT_EQ(r1.sources, 2u);
  EXPECT_EQ(r1.answered, 2u);
  EXPECT_TRUE(r1.failures.empty());
  EXPECT_THAT(fetch_.TakeCalls(), ElementsAre(std::string(kA) + "/api/v1/matrix?window=10s",
                                              std::string(kA) + "/api/v1/matrix?window=1m",
                                              std::string(kA) + "/api/v1/matrix?window=10m",
                                              std::string(kB) + "/api/v1/matrix?window=10s",
                                              std::string(kB) + "/api/v1/matrix?window=1m",
                                              std::string(kB) + "/api/v1/matrix?window=10m"));
  const TimeNs first_ns = clock_.NowNs();
  ClusterMatrix m = Matrix();
  EXPECT_TRUE(m.sources[0].reachable);
  EXPECT_TRUE(m.sources[1].reachable);
  EXPECT_EQ(m.sources[1].name, "b");
  EXPECT_EQ(m.cells.size(), 6u);

  // b stops answering: one fetch tells, its other windows are not asked.
  clock_.AdvanceBy(5 * kNsPerSec);
  fetch_.Answer(kB, UnavailableError("GET http://127.0.0.1:4202/api/v1/matrix?window=10s: "
                                     "connection refused"));
  CollectorRound r2 = collector_->RunRound();
  EXPECT_EQ(r2.number, 2u);
  EXPECT_EQ(r2.answered, 1u);
  EXPECT_THAT(r2.failures, ElementsAre("b: GET http://127.0.0.1:4202/api/v1/matrix?window=10s: "
                                       "connection refused"));
  EXPECT_EQ(fetch_.TakeCalls().size(), 4u);
  clock_.AdvanceBy(kNsPerSec);
  for (std::string_view window : kCollectorWindows) {
    m = Matrix(window);
    ASSERT_EQ(m.sources.size(), 2u);
    EXPECT_TRUE(m.sources[0].reachable);
    const SourceState& b = m.sources[1];
    EXPECT_FALSE(b.reachable) << window;
    EXPECT_EQ(b.name, "b");
    EXPECT_THAT(b.error, HasSubstr("connection refused"));
    EXPECT_EQ(b.fetched_ns, first_ns);  // its last good data, 6 s old
    EXPECT_EQ(m.taken_ns - b.fetched_ns, 6 * kNsPerSec);
    ASSERT_EQ(m.cells.size(), 6u);
    // a's answered 1 s ago: its cells' ages count to now.
    ASSERT_TRUE(m.cells[0].age_s.has_value());
    EXPECT_DOUBLE_EQ(*m.cells[0].age_s, 1.1);
    for (size_t i = 3; i < 6; ++i) {
      EXPECT_EQ(m.cells[i].from, "b");
      EXPECT_EQ(m.cells[i].state, kCellUnreachable);
    }
  }

  // b is back.
  clock_.AdvanceBy(4 * kNsPerSec);
  fetch_.Answer(kB, std::string(testing::kMatrixB));
  CollectorRound r3 = collector_->RunRound();
  EXPECT_EQ(r3.answered, 2u);
  m = Matrix();
  EXPECT_TRUE(m.sources[1].reachable);
  EXPECT_EQ(m.sources[1].error, "");
  EXPECT_EQ(m.sources[1].fetched_ns, clock_.NowNs());
  EXPECT_EQ(m.cells[3].state, kCellOk);
  EXPECT_EQ(collector_->rounds(), 3u);
}

TEST_F(CollectorTest, ASourceThatNeverAnsweredIsNamedByItsUrl) {
  fetch_.Answer(kA, std::string(testing::kMatrixA));
  CollectorRound r = collector_->RunRound();
  EXPECT_THAT(r.failures, ElementsAre("127.0.0.1:4202: no such source"));
  ClusterMatrix m = Matrix();
  EXPECT_EQ(m.sources[1].fetched_ns, 0);
  EXPECT_EQ(m.sources[1].error, "no such source");
}

TEST_F(CollectorTest, AnAnswerThatIsNotAMatrixIsAFailure) {
  fetch_.Answer(kA, std::string(testing::kMatrixA));
  fetch_.Answer(kB, std::string("<html>proxy error</html>"));
  CollectorRound r = collector_->RunRound();
  EXPECT_EQ(r.answered, 1u);
  // Parse errors do not say the source is down: every window is asked.
  EXPECT_EQ(fetch_.TakeCalls().size(), 6u);
  ClusterMatrix m = Matrix("10m");
  EXPECT_FALSE(m.sources[1].reachable);
  EXPECT_EQ(m.sources[1].error,
            "GET http://127.0.0.1:4202/api/v1/matrix?window=10m: matrix: not JSON");
}

TEST_F(CollectorTest, OnlyTheDaemonsWindows) {
  Result<ClusterMatrix> m = collector_->Matrix("5m");
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.status().message(), "window '5m': expected 10s, 1m or 10m");
}

TEST(FetchMatrices, OneWindowFromEverySourceInOrder) {
  SimClock clock(7 * kNsPerSec);
  FakeFetch fetch;
  fetch.Answer(kA, std::string(testing::kMatrixA));
  fetch.Answer("http://c:1", std::string("{}"));
  std::vector<SourceFetch> got =
      FetchMatrices({kA, kB, "http://c:1"}, "10s", 2 * kNsPerSec, fetch.Function(), clock, 2);
  ASSERT_EQ(got.size(), 3u);
  EXPECT_EQ(got[0].url, kA);
  EXPECT_TRUE(got[0].reachable);
  EXPECT_EQ(got[0].fetched_ns, 7 * kNsPerSec);
  ASSERT_TRUE(got[0].matrix.has_value());
  EXPECT_EQ(got[0].matrix->self, "a");
  EXPECT_FALSE(got[1].reachable);
  EXPECT_EQ(got[1].error, "no such source");
  EXPECT_FALSE(got[1].matrix.has_value());
  EXPECT_FALSE(got[2].reachable);
  EXPECT_EQ(got[2].error, "GET http://c:1/api/v1/matrix?window=10s: hosts: missing");
  std::vector<std::string> calls = fetch.TakeCalls();
  std::sort(calls.begin(), calls.end());
  EXPECT_THAT(calls, ElementsAre(std::string(kA) + "/api/v1/matrix?window=10s",
                                 std::string(kB) + "/api/v1/matrix?window=10s",
                                 "http://c:1/api/v1/matrix?window=10s"));
}

TEST(Collector, CreateChecksItsOptions) {
  SimClock clock;
  FakeFetch fetch;
  auto refused = [&](CollectorOptions o, std::string_view what) {
    auto c = Collector::Create(std::move(o), clock, fetch.Function());
    ASSERT_FALSE(c.ok());
    EXPECT_THAT(c.status().message(), HasSubstr(what));
  };
  CollectorOptions o = TwoSources();
  o.sources.clear();
  refused(o, "no sources");
  o = TwoSources();
  o.sources.push_back(kA);
  refused(o, "given twice");
  o = TwoSources();
  o.interval = 0;
  refused(o, "interval");
  o = TwoSources();
  o.fetch_timeout = -1;
  refused(o, "timeout");
  o = TwoSources();
  o.parallel = 0;
  refused(o, "parallel");
  EXPECT_FALSE(Collector::Create(TwoSources(), clock, nullptr).ok());
}

// The thread: rounds start at once and every interval, in parallel fetches,
// and Stop() ends it between rounds.
TEST(Collector, StartRunsRoundsUntilStop) {
  FakeFetch fetch;
  fetch.Answer(kA, std::string(testing::kMatrixA));
  fetch.Answer(kB, std::string(testing::kMatrixB));
  Mutex mu;
  CondVar cv;
  std::vector<CollectorRound> rounds;
  CollectorOptions o = TwoSources();
  o.parallel = 2;
  o.interval = kNsPerMs;
  o.on_round = [&](const CollectorRound& r) {
    MutexLock lock(mu);
    rounds.push_back(r);
    cv.NotifyAll();
  };
  auto c = Collector::Create(o, SystemClock::Get(), fetch.Function());
  ASSERT_TRUE(c.ok()) << c.status();
  (*c)->Start();
  {
    MutexLock lock(mu);
    const auto deadline = CondVar::Clock::now() + std::chrono::seconds(10);
    while (rounds.size() < 3 && CondVar::Clock::now() < deadline) cv.WaitUntil(mu, deadline);
    ASSERT_GE(rounds.size(), 3u);
  }
  (*c)->Stop();
  (*c)->Stop();
  MutexLock lock(mu);
  EXPECT_EQ(rounds[0].number, 1u);
  EXPECT_EQ(rounds[2].number, 3u);
  EXPECT_EQ(rounds[2].answered, 2u);
  EXPECT_EQ((*c)->rounds(), rounds.size());
}

}  // namespace
}  // namespace wharf::mesh
