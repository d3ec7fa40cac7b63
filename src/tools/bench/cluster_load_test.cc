// Tests for the cluster node's open-loop driver and unloaded pass, on a
// SimClock with a fake transport that answers after a fixed latency.
#include "tools/bench/cluster_load.h"

#include <gtest/gtest.h>

#include <map>

#include "base/sim_clock.h"

namespace wharf::tools::bench {
namespace {

class FakeTransport final : public LoadTransport {
 public:
  FakeTransport(SimClock& clock, DurationNs latency) : clock_(clock), latency_(latency) {}

  Status Issue(uint32_t tag, int server, uint64_t bytes) override {
    issues.push_back({clock_.NowNs(), server, bytes});
    ++in_flight;
    max_in_flight = std::max(max_in_flight, in_flight);
    pending_.emplace(clock_.NowNs() + latency_, tag);
    return OkStatus();
  }

  void Wait(TimeNs deadline, CompletionSink& sink) override {
    if (pending_.empty() || pending_.begin()->first > deadline) {
      clock_.AdvanceTo(std::max(clock_.NowNs(), deadline));
      return;
    }
    const TimeNs at = pending_.begin()->first;
    clock_.AdvanceTo(std::max(clock_.NowNs(), at));
    while (!pending_.empty() && pending_.begin()->first == at) {
      const uint32_t tag = pending_.begin()->second;
      pending_.erase(pending_.begin());
      --in_flight;
      sink.Done(tag, true);
      sink.Done(tag, true);  // a duplicate answer is ignored
    }
  }

  struct Issued {
    TimeNs at;
    int server;
    uint64_t bytes;
  };
  std::vector<Issued> issues;
  int in_flight = 0;
  int max_in_flight = 0;

 private:
  SimClock& clock_;
  DurationNs latency_;
  std::multimap<TimeNs, uint32_t> pending_;
};

ArrivalConfig Config() {
  return {.load = 0.5, .link_bps = 1'000'000'000, .hosts = 4, .client_threads = 2};
}

TEST(ClusterLoadTest, IssuesAtTheGeneratorsTimesWithoutWaitingForAnswers) {
  const Workload w = Workload::Fixed(10'000);
  auto gen = ArrivalGenerator::Create(Config(), w, 1, 0, 7);
  auto reference = ArrivalGenerator::Create(Config(), w, 1, 0, 7);
  ASSERT_TRUE(gen.ok() && reference.ok());
  SimClock clock(1'000'000);
  // Answers take 1 ms, far longer than the mean gap (~640 us): open loop
  // means several are in flight.
  FakeTransport transport(clock, 1 * kNsPerMs);
  const TimeNs start = 5'000'000;
  LoadResult r = RunOpenLoop(*gen, transport, clock,
                             {.start_ns = start, .duration_ns = 100 * kNsPerMs,
                              .drain_ns = 10 * kNsPerMs, .max_outstanding = 64});
  ASSERT_GT(transport.issues.size(), 100u);  // ~156 at 1562 RPC/s
  for (const auto& issued : transport.issues) {
    const Arrival a = reference->Next();
    EXPECT_EQ(issued.at, start + a.send_offset_ns);
    EXPECT_EQ(issued.server, a.server);
    EXPECT_EQ(issued.bytes, a.request_bytes);
  }
  EXPECT_GE(reference->Next().send_offset_ns, 100 * kNsPerMs);  // none left out
  EXPECT_GT(transport.max_in_flight, 1);
  EXPECT_EQ(r.counters.issued, transport.issues.size());
  EXPECT_EQ(r.counters.completed, r.counters.issued);
  EXPECT_EQ(r.counters.issued_bytes, 2 * 10'000 * r.counters.issued);
  EXPECT_EQ(r.counters.dropped + r.counters.failed + r.counters.unfinished, 0u);
  ASSERT_EQ(r.samples.size(), r.counters.completed);
  for (const RpcSample& s : r.samples) EXPECT_EQ(s.rtt_ns, 1 * kNsPerMs);
  for (DurationNs late : r.lateness_ns) EXPECT_EQ(late, 0);
}

TEST(ClusterLoadTest, DropsBeyondTheOutstandingBound) {
  const Workload w = Workload::Fixed(1000);
  auto gen = ArrivalGenerator::Create(Config(), w, 0, 1, 3);
  ASSERT_TRUE(gen.ok());
  SimClock clock;
  FakeTransport transport(clock, 10 * kNsPerSec);  // never answers within the run
  LoadResult r = RunOpenLoop(*gen, transport, clock,
                             {.start_ns = 0, .duration_ns = 50 * kNsPerMs,
                              .drain_ns = 5 * kNsPerMs, .max_outstanding = 4});
  EXPECT_EQ(r.counters.issued, 4u);
  EXPECT_EQ(transport.max_in_flight, 4);
  EXPECT_GT(r.counters.dropped, 100u);
  EXPECT_EQ(r.counters.unfinished, 4u);
  EXPECT_TRUE(r.samples.empty());
  EXPECT_EQ(clock.NowNs(), 55 * kNsPerMs);  // drained up to the bound, no longer
}

TEST(ClusterLoadTest, UnloadedPassSendsOneAtATime) {
  SimClock clock;
  FakeTransport transport(clock, 20 * kNsPerUs);
  LoadResult r = RunUnloaded(transport, clock, {.server = 2, .sizes = {10, 1000}, .per_size = 3});
  ASSERT_EQ(transport.issues.size(), 6u);
  EXPECT_EQ(transport.max_in_flight, 1);
  EXPECT_EQ(transport.issues[0].bytes, 10u);
  EXPECT_EQ(transport.issues[5].bytes, 1000u);
  EXPECT_EQ(transport.issues[1].at - transport.issues[0].at, 20 * kNsPerUs);
  for (const auto& i : transport.issues) EXPECT_EQ(i.server, 2);
  EXPECT_EQ(r.samples.size(), 6u);
}

TEST(ClusterLoadTest, SummarizesLateness) {
  std::vector<DurationNs> late;
  EXPECT_EQ(SummarizeLateness(late).max_ns, 0);
  for (int i = 100; i >= 1; --i) late.push_back(i);
  const Lateness l = SummarizeLateness(late);
  EXPECT_EQ(l.p99_ns, 99);
  EXPECT_EQ(l.max_ns, 100);
}

}  // namespace
}  // namespace wharf::tools::bench
