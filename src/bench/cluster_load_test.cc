// Tests for the cluster node's open-loop driver and unloaded pass, on a
// SimClock with a fake transport that answers after a fixed latency.
#include "bench/cluster_load.h"

#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <set>
#include <string>

#include "base/sim_clock.h"

namespace wharf::bench {
namespace {

class FakeTransport final : public LoadTransport {
 public:
  FakeTransport(SimClock& clock, DurationNs latency) : clock_(clock), latency_(latency) {}

  // Issue calls (0-based, failed ones included) that fail, are answered
  // with an error, or are never answered (a lost datagram).
  std::set<size_t> fail_calls, error_calls, lost_calls;
  // Time that passes between two answers one Wait reports (its own work).
  DurationNs report_gap = 0;

  Status Issue(uint32_t tag, int server, uint64_t bytes) override {
    const size_t call = calls++;
    trace += 'I';
    attempt_times.push_back(clock_.NowNs());
    if (fail_calls.count(call) != 0) return UnavailableError("refused");
    issues.push_back({clock_.NowNs(), server, bytes});
    if (lost_calls.count(call) != 0) return OkStatus();
    ++in_flight;
    max_in_flight = std::max(max_in_flight, in_flight);
    pending_.emplace(clock_.NowNs() + latency_, std::make_pair(tag, error_calls.count(call) == 0));
    return OkStatus();
  }

  void Wait(TimeNs deadline, CompletionSink& sink) override {
    trace += 'W';
    in_flight_at_wait.push_back(in_flight);
    if (pending_.empty() || pending_.begin()->first > deadline) {
      clock_.AdvanceTo(std::max(clock_.NowNs(), deadline));
      return;
    }
    const TimeNs at = pending_.begin()->first;
    clock_.AdvanceTo(std::max(clock_.NowNs(), at));
    while (!pending_.empty() && pending_.begin()->first == at) {
      const auto [tag, ok] = pending_.begin()->second;
      pending_.erase(pending_.begin());
      --in_flight;
      sink.Done(tag, ok);
      sink.Done(tag, ok);  // a duplicate answer is ignored
      clock_.AdvanceTo(clock_.NowNs() + report_gap);
    }
  }

  void BeginBurst() override { trace += '['; }
  void EndBurst() override { trace += ']'; }

  struct Issued {
    TimeNs at;
    int server;
    uint64_t bytes;
  };
  std::vector<Issued> issues;        // accepted Issue calls
  std::vector<TimeNs> attempt_times;  // every Issue call
  size_t calls = 0;
  int in_flight = 0;  // answers still to come
  int max_in_flight = 0;
  std::vector<int> in_flight_at_wait;  // `in_flight` as each Wait began
  // The calls in order: '[' BeginBurst, ']' EndBurst, 'I' Issue, 'W' Wait.
  std::string trace;

 private:
  SimClock& clock_;
  DurationNs latency_;
  std::multimap<TimeNs, std::pair<uint32_t, bool>> pending_;  // answer time -> (tag, ok)
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
  for (const RpcSample& s : r.samples) {
    EXPECT_EQ(s.rtt_ns, 1 * kNsPerMs);
    EXPECT_EQ(s.request_bytes, 10'000u);
    EXPECT_EQ(s.response_bytes, 10'000u);  // echoed
  }
  for (DurationNs late : r.lateness_ns) EXPECT_EQ(late, 0);
}

TEST(ClusterLoadTest, OpenLoopRunsInTheRoomPreparedBeforeTheStart) {
  const Workload w = Workload::Fixed(10'000);
  auto gen = ArrivalGenerator::Create(Config(), w, 1, 0, 7);
  auto again = ArrivalGenerator::Create(Config(), w, 1, 0, 7);
  ASSERT_TRUE(gen.ok() && again.ok());
  const OpenLoopOptions o{.start_ns = 5'000'000, .duration_ns = 100 * kNsPerMs,
                          .drain_ns = 10 * kNsPerMs, .max_outstanding = 64};
  // ~156 expected at 1562 RPC/s: 1.2x plus 64, all of it written now.
  LoadResult prepared = PrepareOpenLoop(*gen, o);
  EXPECT_TRUE(prepared.samples.empty() && prepared.lateness_ns.empty());
  ASSERT_GE(prepared.samples.capacity(), 200u);
  ASSERT_GE(prepared.lateness_ns.capacity(), 200u);
  const RpcSample* room = prepared.samples.data();

  SimClock clock(1'000'000);
  FakeTransport transport(clock, 1 * kNsPerMs);
  LoadResult r = RunOpenLoop(*gen, transport, clock, o, std::move(prepared));
  EXPECT_EQ(r.samples.data(), room);  // never grew: the prepared pages held them all
  // The same run without a prepared room (the fallback) records the same.
  SimClock clock2(1'000'000);
  FakeTransport transport2(clock2, 1 * kNsPerMs);
  LoadResult plain = RunOpenLoop(*again, transport2, clock2, o);
  EXPECT_GT(r.counters.completed, 100u);
  EXPECT_EQ(r.counters.completed, plain.counters.completed);
  EXPECT_EQ(r.counters.issued, plain.counters.issued);
  ASSERT_EQ(r.samples.size(), plain.samples.size());
  EXPECT_EQ(r.lateness_ns, plain.lateness_ns);
}

// --response-size N: the samples say N bytes came back and issued_bytes
// counts request + N, not twice the request.
TEST(ClusterLoadTest, OpenLoopRecordsFixedResponses) {
  const Workload w = Workload::Fixed(10'000);
  auto gen = ArrivalGenerator::Create(Config(), w, 1, 0, 7);
  ASSERT_TRUE(gen.ok());
  SimClock clock;
  FakeTransport transport(clock, 1 * kNsPerMs);
  LoadResult r = RunOpenLoop(*gen, transport, clock,
                             {.start_ns = 0, .duration_ns = 50 * kNsPerMs,
                              .drain_ns = 10 * kNsPerMs, .max_outstanding = 64,
                              .response_bytes = 100});
  ASSERT_GT(r.counters.completed, 10u);
  EXPECT_EQ(r.counters.issued_bytes, (10'000u + 100u) * r.counters.issued);
  ASSERT_EQ(r.samples.size(), r.counters.completed);
  for (const RpcSample& s : r.samples) {
    EXPECT_EQ(s.request_bytes, 10'000u);
    EXPECT_EQ(s.response_bytes, 100u);
  }
  for (const auto& issued : transport.issues) EXPECT_EQ(issued.bytes, 10'000u);
}

TEST(ClusterLoadTest, UnloadedPassRecordsFixedResponses) {
  SimClock clock;
  FakeTransport transport(clock, 20 * kNsPerUs);
  LoadResult r = RunUnloaded(
      transport, clock, {.server = 1, .sizes = {10, 1000}, .per_size = 2, .response_bytes = 64});
  ASSERT_EQ(r.samples.size(), 4u);
  EXPECT_EQ(r.counters.issued_bytes, 2 * (10u + 64u) + 2 * (1000u + 64u));
  EXPECT_EQ(r.samples[0].request_bytes, 10u);
  EXPECT_EQ(r.samples[3].request_bytes, 1000u);
  for (const RpcSample& s : r.samples) EXPECT_EQ(s.response_bytes, 64u);
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
  EXPECT_EQ(r.counters.issued_bytes, 3 * 2 * 10u + 3 * 2 * 1000u);  // echoed
  for (const RpcSample& s : r.samples) EXPECT_EQ(s.response_bytes, s.request_bytes);
}

// Sizes 10 (3 RPCs), 1000 (3) and 5000 (3): the second 1000-byte RPC and
// everything after it are lost; the pass stops after 2 in a row instead of
// waiting out the timeout of every remaining one. A lone loss does not stop it.
TEST(ClusterLoadTest, UnloadedPassGivesUpAfterUnansweredInARow) {
  SimClock clock;
  FakeTransport transport(clock, 20 * kNsPerUs);
  transport.lost_calls = {1, 4, 5, 6, 7, 8};
  LoadResult r = RunUnloaded(transport, clock,
                             {.server = 1, .sizes = {10, 1000, 5000}, .per_size = 3,
                              .rpc_timeout_ns = kNsPerSec, .give_up_after = 2});
  EXPECT_EQ(transport.calls, 6u);  // the lone loss (call 1) did not stop it
  EXPECT_EQ(r.counters.unfinished, 3u);
  EXPECT_EQ(r.samples.size(), 3u);
  EXPECT_EQ(clock.NowNs(), 3 * kNsPerSec + 3 * 20 * kNsPerUs);
}

TEST(ClusterLoadTest, ClosedLoopKeepsExactlyInFlightOutstanding) {
  SimClock clock(1'000'000);
  FakeTransport transport(clock, 100 * kNsPerUs);
  const ClosedLoopResult r =
      RunClosedLoop(transport, clock,
                    {.server = 1, .bytes = 64, .in_flight = 8, .warmup_ns = 1 * kNsPerMs,
                     .duration_ns = 10 * kNsPerMs});
  EXPECT_EQ(transport.max_in_flight, 8);
  EXPECT_EQ(r.max_in_flight, 8);
  // Every slot is re-issued before the driver waits again.
  for (int n : transport.in_flight_at_wait) EXPECT_EQ(n, 8);
  for (const auto& i : transport.issues) {
    EXPECT_EQ(i.server, 1);
    EXPECT_EQ(i.bytes, 64u);
  }
  // Batches of 8 answers every 100 us; those at 1.0 .. 10.9 ms are in the
  // window [1 ms, 11 ms), the one at 11.0 ms is not.
  EXPECT_EQ(r.rpcs, 800u);
  EXPECT_EQ(r.issued, 8u + 8u * 109u);
  EXPECT_EQ(r.failed, 0u);
  EXPECT_EQ(r.elapsed_ns, 10 * kNsPerMs);
  ASSERT_EQ(r.rtt_ns.size(), r.rpcs);
  for (DurationNs rtt : r.rtt_ns) EXPECT_EQ(rtt, 100 * kNsPerUs);
}

TEST(ClusterLoadTest, ClosedLoopRunsInTheRoomPreparedBeforeTheStart) {
  // From the duration at 1.5M RPC/s, within [64Ki, 16Mi]; an explicit room wins.
  EXPECT_EQ(ClosedLoopSampleRoom({.duration_ns = 2 * kNsPerSec}), 3'000'000u);
  EXPECT_EQ(ClosedLoopSampleRoom({.duration_ns = 1 * kNsPerMs}), size_t{1} << 16);
  EXPECT_EQ(ClosedLoopSampleRoom({.duration_ns = 3600 * kNsPerSec}), size_t{1} << 24);
  EXPECT_EQ(ClosedLoopSampleRoom({.duration_ns = 2 * kNsPerSec, .reserve_samples = 10}), 10u);
  const ClosedLoopOptions o{.server = 1, .bytes = 64, .in_flight = 8,
                            .warmup_ns = 1 * kNsPerMs, .duration_ns = 10 * kNsPerMs};
  ClosedLoopResult prepared = PrepareClosedLoop(o);
  EXPECT_TRUE(prepared.rtt_ns.empty());
  ASSERT_GE(prepared.rtt_ns.capacity(), size_t{1} << 16);
  const DurationNs* room = prepared.rtt_ns.data();
  SimClock clock(1'000'000);
  FakeTransport transport(clock, 100 * kNsPerUs);
  const ClosedLoopResult r = RunClosedLoop(transport, clock, o, std::move(prepared));
  EXPECT_EQ(r.rpcs, 800u);
  EXPECT_EQ(r.rtt_ns.data(), room);  // never grew: the prepared room held every sample
}

TEST(ClusterLoadTest, ClosedLoopKeepsEverySampleWhenTheWindowOutgrowsItsRoom) {
  // The fallback: a room of 16 for 800 answers grows, and loses none.
  SimClock clock(1'000'000);
  FakeTransport transport(clock, 100 * kNsPerUs);
  const ClosedLoopResult r =
      RunClosedLoop(transport, clock,
                    {.server = 1, .bytes = 64, .in_flight = 8, .warmup_ns = 1 * kNsPerMs,
                     .duration_ns = 10 * kNsPerMs, .reserve_samples = 16});
  EXPECT_EQ(r.rpcs, 800u);
  ASSERT_EQ(r.rtt_ns.size(), 800u);
  for (DurationNs rtt : r.rtt_ns) EXPECT_EQ(rtt, 100 * kNsPerUs);
}

TEST(ClusterLoadTest, AnswersOneWaitReportsShareOneClockRead) {
  // The fake spends 1 us per answer it reports; all 8 of a Wait were there
  // when it found the first, so each RTT is the 100 us latency, not up to
  // 107 us, and the next Wait's answers get a read of their own.
  SimClock clock(1'000'000);
  FakeTransport transport(clock, 100 * kNsPerUs);
  transport.report_gap = 1 * kNsPerUs;
  const ClosedLoopResult r =
      RunClosedLoop(transport, clock,
                    {.server = 1, .bytes = 64, .in_flight = 8, .warmup_ns = 1 * kNsPerMs,
                     .duration_ns = 5 * kNsPerMs});
  ASSERT_GT(r.rpcs, 100u);
  for (DurationNs rtt : r.rtt_ns) ASSERT_EQ(rtt, 100 * kNsPerUs);
}

TEST(ClusterLoadTest, ClosedLoopRefillsEachWindowAsOneBurst) {
  SimClock clock(1'000'000);
  FakeTransport transport(clock, 100 * kNsPerUs);
  RunClosedLoop(transport, clock,
                {.server = 1, .bytes = 64, .in_flight = 8, .warmup_ns = 1 * kNsPerMs,
                 .duration_ns = 1 * kNsPerMs});
  // The first refill issues all 8 in one burst; each later one re-issues
  // the 8 that one wait finished, in one burst; nothing is issued outside a
  // burst, no burst is empty or nested, and no wait happens inside one.
  ASSERT_EQ(transport.trace.rfind("[IIIIIIII]W", 0), 0u) << transport.trace.substr(0, 40);
  int depth = 0;
  int in_burst = 0;
  for (size_t i = 0; i < transport.trace.size(); ++i) {
    const char c = transport.trace[i];
    if (c == '[') {
      ASSERT_EQ(depth, 0) << "nested burst at " << i;
      ++depth;
      in_burst = 0;
    } else if (c == ']') {
      ASSERT_EQ(depth, 1) << "unmatched EndBurst at " << i;
      --depth;
      EXPECT_EQ(in_burst, 8) << "burst ending at " << i;
    } else if (c == 'I') {
      ASSERT_EQ(depth, 1) << "Issue outside a burst at " << i;
      ++in_burst;
    } else {
      ASSERT_EQ(depth, 0) << "Wait inside a burst at " << i;
    }
  }
  EXPECT_EQ(depth, 0);
  EXPECT_EQ(static_cast<size_t>(std::count(transport.trace.begin(), transport.trace.end(), 'I')),
            transport.calls);
}

TEST(ClusterLoadTest, ClosedLoopBurstsHoldWhatOneWaitFreed) {
  // One RPC in flight: every refill is a burst of the one slot the wait
  // before it freed.
  SimClock clock(1'000'000);
  FakeTransport transport(clock, 100 * kNsPerUs);
  RunClosedLoop(transport, clock,
                {.server = 1, .bytes = 64, .in_flight = 1, .warmup_ns = 1 * kNsPerMs,
                 .duration_ns = 1 * kNsPerMs});
  ASSERT_GE(transport.calls, 10u);
  std::string expected;
  for (size_t i = 0; i < transport.calls; ++i) expected += "[I]W";
  // The run may end after a refill, before its wait.
  EXPECT_EQ(transport.trace.substr(0, expected.size() - 1), expected.substr(0, expected.size() - 1));
  EXPECT_EQ(static_cast<size_t>(std::count(transport.trace.begin(), transport.trace.end(), 'I')),
            transport.calls);
}

TEST(ClusterLoadTest, ClosedLoopCountsOnlyTheWindow) {
  SimClock clock;
  FakeTransport transport(clock, 100 * kNsPerUs);
  TimeNs opened = -1, closed = -1;
  const ClosedLoopResult r = RunClosedLoop(
      transport, clock,
      {.in_flight = 1, .warmup_ns = 1 * kNsPerMs, .duration_ns = 2 * kNsPerMs,
       .window_opened = [&] { opened = clock.NowNs(); },
       .window_closed = [&] { closed = clock.NowNs(); }});
  EXPECT_EQ(opened, 1 * kNsPerMs);
  EXPECT_EQ(closed, 3 * kNsPerMs);
  EXPECT_EQ(r.rpcs, 20u);  // answers at 1.0, 1.1, ... 2.9 ms
  EXPECT_EQ(r.issued, 30u);
  EXPECT_EQ(r.unfinished, 0u);  // the one answered at 3.0 ms was not re-issued
  EXPECT_EQ(transport.max_in_flight, 1);
}

TEST(ClusterLoadTest, ClosedLoopCountsAndReissuesFailures) {
  SimClock clock;
  FakeTransport transport(clock, 100 * kNsPerUs);
  transport.fail_calls = {5};
  transport.error_calls = {10, 11};
  const ClosedLoopResult r = RunClosedLoop(
      transport, clock, {.in_flight = 1, .warmup_ns = 0, .duration_ns = 10 * kNsPerMs});
  // Call 5 is refused at 0.5 ms: the next call comes 1 ms later, not at
  // once. Calls 10 and 11 (1.9 and 3.0 ms) are answered with errors 100 us
  // later, each followed by the same pause.
  ASSERT_GT(transport.attempt_times.size(), 12u);
  EXPECT_EQ(transport.attempt_times[5], 500 * kNsPerUs);
  EXPECT_EQ(transport.attempt_times[6], 1500 * kNsPerUs);
  EXPECT_EQ(transport.attempt_times[10], 1900 * kNsPerUs);
  EXPECT_EQ(transport.attempt_times[11], 3000 * kNsPerUs);
  EXPECT_EQ(transport.attempt_times[12], 4100 * kNsPerUs);
  // Good answers from calls 0-4, 6-9 and 12-69 (4.2 .. 9.9 ms).
  EXPECT_EQ(r.failed, 3u);
  EXPECT_EQ(r.rpcs, 5u + 4u + 58u);
  EXPECT_EQ(r.issued, transport.calls);
  EXPECT_EQ(r.timed_out, 0u);
  EXPECT_EQ(transport.max_in_flight, 1);
}

TEST(ClusterLoadTest, ClosedLoopAbandonsUnansweredRpcsAndReissues) {
  SimClock clock;
  FakeTransport transport(clock, 100 * kNsPerUs);
  transport.lost_calls = {2};
  const ClosedLoopResult r =
      RunClosedLoop(transport, clock,
                    {.in_flight = 2, .warmup_ns = 0, .duration_ns = 20 * kNsPerMs,
                     .rpc_timeout_ns = 5 * kNsPerMs});
  EXPECT_EQ(r.timed_out, 1u);
  EXPECT_EQ(r.failed, 1u);
  EXPECT_EQ(r.max_in_flight, 2);
  // Once the lost one is abandoned (at the 10 ms scan: issued at 0.1 ms,
  // not yet 5 ms old at the 5 ms scan), two are in flight again.
  ASSERT_FALSE(transport.in_flight_at_wait.empty());
  EXPECT_EQ(transport.in_flight_at_wait.back(), 2);
  ASSERT_GT(transport.attempt_times.size(), 5u);
  EXPECT_EQ(transport.attempt_times[2], 100 * kNsPerUs);  // the lost one
  EXPECT_EQ(transport.attempt_times[4], 200 * kNsPerUs);  // the other slot runs on alone
  EXPECT_EQ(transport.attempt_times[5], 300 * kNsPerUs);
  // One slot answered every 100 us for 20 ms, the other only 0-10 ms.
  EXPECT_EQ(r.rpcs, 200u + 100u - 1u);
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
}  // namespace wharf::bench
