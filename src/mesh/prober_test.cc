// Prober: probes leave on schedule and each outcome lands in its series:
// answers, losses (timeouts), failures, duplicates, reordering, a peer that
// stops answering and comes back, and a pinglist change mid-run. The network
// is a scripted sender: the test decides what happens to each probe.
#include "mesh/prober.h"

#include <gtest/gtest.h>

#include <deque>
#include <functional>
#include <map>
#include <vector>

#include "mesh/probe_responder.h"
#include "wire/mesh_probe.h"

namespace wharf::mesh {
namespace {

constexpr TimeNs kStart = 100 * kNsPerSec;
constexpr DurationNs kRtt = 40 * kNsPerUs;
constexpr DurationNs kDwell = 5 * kNsPerUs;

struct SentProbe {
  uint64_t op_id;
  std::string host;
  ProbeTransport transport;
  Buffer request;
  TimeNs deadline_ns;
};

class ScriptedSender final : public ProbeSender {
 public:
  void SendProbe(uint64_t op_id, const ProbeTargetSpec& target, Buffer request,
                 TimeNs deadline_ns) override {
    sent.push_back({op_id, target.host, target.transport, std::move(request), deadline_ns});
  }
  std::deque<SentProbe> sent;
};

ProbeTargetSpec Target(std::string host, ProbeTransport transport = ProbeTransport::kHoma,
                       DurationNs interval = 100 * kNsPerMs) {
  ProbeTargetSpec spec;
  spec.host = std::move(host);
  spec.transport = transport;
  spec.uri.scheme = std::string(TransportName(transport));
  spec.uri.address = transport::NetAddress::Ipv4(0xC6120001, 4000);
  spec.probe.interval = interval;
  spec.probe.timeout = 50 * kNsPerMs;
  return spec;
}

class ProberTest : public testing::Test {
 protected:
  // The kernel's stamps of one probe's two ends.
  struct Stamps {
    TimeNs received_ns = 0;
    TimeNs sent_ns = 0;
  };
  // Sends three probes to the one target, one per poll, and completes each
  // when the loop reads its answer, 1 ms after it left, with the stamps
  // `stamps(i, sent, read)` gives probe i.
  void CompleteThreeProbes(const std::function<Stamps(size_t, TimeNs, TimeNs)>& stamps) {
    prober_.SetTargets({Target("b")}, now_);
    for (size_t i = 0; i < 3; ++i) {
      SendProbes(i + 1);
      const SentProbe& probe = sender_.sent[i];
      const TimeNs sent = now_;  // SendProbes' last poll sent it
      Result<ProbeAnswer> answer = responder_.Answer(probe.request.span(), sent + 20 * kNsPerUs,
                                                     sent + 20 * kNsPerUs + kDwell);
      ASSERT_TRUE(answer.ok());
      const TimeNs read = sent + kNsPerMs;
      const Stamps s = stamps(i, sent, read);
      prober_.OnComplete(probe.op_id, OkStatus(), answer->message.span(), read, s.received_ns,
                         s.sent_ns);
    }
  }
  // The responder's answer to `probe`, as the engine would complete it.
  void Answer(const SentProbe& probe, TimeNs now) {
    // The probe spent kDwell in the responder, just before the answer left.
    Result<ProbeAnswer> answer = responder_.Answer(probe.request.span(), now - kDwell, now);
    ASSERT_TRUE(answer.ok()) << answer.status();
    prober_.OnComplete(probe.op_id, OkStatus(), answer->message.span(), now);
  }
  // Runs the prober for `span`, answering each probe after kRtt unless
  // `drop` says the network lost it (then it times out at its deadline).
  template <typename Drop>
  void RunFor(DurationNs span, Drop drop) {
    const TimeNs end = now_ + span;
    for (; now_ < end; now_ += 10 * kNsPerUs) {
      prober_.Poll(now_);
      while (!sender_.sent.empty()) {
        pending_.push_back(std::move(sender_.sent.front()));
        sender_.sent.pop_front();
      }
      for (auto it = pending_.begin(); it != pending_.end();) {
        const TimeNs sent_at = it->deadline_ns - 50 * kNsPerMs;
        if (!drop(*it) && now_ >= sent_at + kRtt) {
          Answer(*it, now_);
          it = pending_.erase(it);
        } else if (now_ >= it->deadline_ns) {
          prober_.OnComplete(it->op_id, DeadlineExceededError("probe"), {}, now_);
          it = pending_.erase(it);
        } else {
          ++it;
        }
      }
    }
  }
  void RunFor(DurationNs span) {
    RunFor(span, [](const SentProbe&) { return false; });
  }
  // Moves time on in 1 ms steps until the prober has sent `count` probes
  // (still in sender_.sent) in all.
  void SendProbes(size_t count) {
    while (sender_.sent.size() < count) {
      now_ += kNsPerMs;
      prober_.Poll(now_);
    }
  }

  ScriptedSender sender_;
  MeshResponder responder_;
  Prober prober_{42, &sender_, ProberOptions{}};
  std::vector<SentProbe> pending_;
  TimeNs now_ = kStart;
};

TEST_F(ProberTest, AnsweredProbesGiveRoundTripAndNetworkTime) {
  prober_.SetTargets({Target("b")}, now_);
  RunFor(10 * kNsPerSec);
  ASSERT_EQ(prober_.size(), 1u);
  const ProbeSeries& s = prober_.series(0);
  EXPECT_NEAR(static_cast<double>(s.counters().sent), 100, 3);
  EXPECT_EQ(s.counters().answered, s.counters().sent - s.in_flight());
  EXPECT_EQ(s.counters().lost, 0u);
  const WindowSummary rtt = s.rtt().Summary(Window::k10s, now_);
  const WindowSummary net = s.network().Summary(Window::k10s, now_);
  // Answered on the first 10 us tick at or after kRtt.
  EXPECT_NEAR(static_cast<double>(rtt.p50_ns), kRtt, 0.07 * kRtt);
  EXPECT_NEAR(static_cast<double>(net.p50_ns), kRtt - kDwell, 0.07 * kRtt);
  EXPECT_EQ(s.State(Window::k10s, now_), SeriesState::kOk);
  EXPECT_EQ(prober_.counters().bad_answers, 0u);
}

// An answer the kernel stamped on arrival is timed by that stamp: a loop
// that read it late does not make the path look slow. A stamp outside the
// probe's life (a clock stepped under the conversion) is not trusted.
TEST_F(ProberTest, TheKernelsReceiveStampEndsTheRoundTripWhenItHasOne) {
  CompleteThreeProbes([](size_t i, TimeNs sent, TimeNs read) {
    // The loop read each answer 1 ms late.
    return Stamps{.received_ns = i == 0 ? sent + kRtt        // trusted
                                 : i == 1 ? sent - kNsPerUs  // before the probe left
                                          : read + kNsPerUs};  // after the loop read it
  });
  const ProbeSeries& s = prober_.series(0);
  EXPECT_EQ(s.counters().answered, 3u);
  EXPECT_EQ(s.counters().kernel_stamped, 1u);
  const WindowSummary rtt = s.rtt().Summary(Window::k10s, now_ + kNsPerMs);
  EXPECT_EQ(rtt.min_ns, static_cast<uint64_t>(kRtt));
  EXPECT_EQ(rtt.max_ns, static_cast<uint64_t>(kNsPerMs));
}

// A probe the kernel stamped on leaving starts its round trip there: the
// prober's own wait between reading its clock and the send is not the
// path's. A stamp before the prober's send time or after the answer's
// arrival is not trusted.
TEST_F(ProberTest, TheKernelsTransmitStampStartsTheRoundTripWhenItHasOne) {
  CompleteThreeProbes([](size_t i, TimeNs sent, TimeNs read) {
    return Stamps{.received_ns = read,
                  .sent_ns = i == 0 ? sent + 100 * kNsPerUs  // trusted: 100 us below the socket
                             : i == 1 ? sent - kNsPerUs       // before the prober's clock read
                                      : read + kNsPerUs};     // after the answer came
  });
  const ProbeSeries& s = prober_.series(0);
  EXPECT_EQ(s.counters().answered, 3u);
  EXPECT_EQ(s.counters().kernel_stamped, 3u);
  EXPECT_EQ(s.counters().kernel_send_stamped, 1u);
  const WindowSummary rtt = s.rtt().Summary(Window::k10s, now_ + kNsPerMs);
  EXPECT_EQ(rtt.min_ns, static_cast<uint64_t>(kNsPerMs - 100 * kNsPerUs));
  EXPECT_EQ(rtt.max_ns, static_cast<uint64_t>(kNsPerMs));
}

TEST_F(ProberTest, EveryProbeCarriesTheEpochAndIncreasingSequenceNumbers) {
  prober_.SetTargets({Target("b")}, now_);
  SendProbes(3);
  ASSERT_EQ(sender_.sent.size(), 3u);
  for (uint64_t i = 0; i < 3; ++i) {
    Result<wire::MeshProbe> p = wire::DecodeMeshProbe(sender_.sent[i].request.span());
    ASSERT_TRUE(p.ok()) << p.status();
    EXPECT_EQ(p->epoch, 42u);
    EXPECT_EQ(p->sequence, i + 1);
    EXPECT_EQ(sender_.sent[i].request.size(), 64u);
  }
}

TEST_F(ProberTest, ATimeoutIsALossAndOtherFailuresAreCountedApart) {
  prober_.SetTargets({Target("b")}, now_);
  SendProbes(2);
  ASSERT_EQ(sender_.sent.size(), 2u);
  prober_.OnComplete(sender_.sent[0].op_id, DeadlineExceededError("late"), {}, now_);
  prober_.OnComplete(sender_.sent[1].op_id, UnavailableError("refused"), {}, now_);
  const ProbeSeries& s = prober_.series(0);
  EXPECT_EQ(s.counters().lost, 1u);
  EXPECT_EQ(s.counters().failed, 1u);
  EXPECT_EQ(s.last_failure(), StatusCode::kUnavailable);
  const WindowSummary w = s.rtt().Summary(Window::k10s, now_);
  EXPECT_EQ(w.answered, 0u);
  EXPECT_EQ(w.lost, 2u);
  // Every probe failed: not the same as no data.
  EXPECT_EQ(s.State(Window::k10s, now_), SeriesState::kAllFailed);
}

TEST_F(ProberTest, NoProbesYetIsNoDataNotZero) {
  prober_.SetTargets({Target("b")}, now_);
  EXPECT_EQ(prober_.series(0).State(Window::k10s, now_), SeriesState::kNoData);
  EXPECT_EQ(prober_.series(0).rtt().Summary(Window::k10s, now_).answered, 0u);
}

TEST_F(ProberTest, LossIsCountedByTheProbesTheNetworkDropped) {
  prober_.SetTargets({Target("b")}, now_);
  // Every fourth probe is dropped.
  RunFor(10 * kNsPerSec, [](const SentProbe& p) {
    return wire::DecodeMeshProbe(p.request.span())->sequence % 4 == 0;
  });
  const SeriesCounters& c = prober_.series(0).counters();
  // Those still in flight at the end are neither.
  EXPECT_NEAR(static_cast<double>(c.lost), static_cast<double>(c.sent) / 4, 1);
  EXPECT_EQ(c.answered + c.lost + prober_.series(0).in_flight(), c.sent);
}

TEST_F(ProberTest, ADuplicateCompletionIsAStrayAndCountsOnce) {
  prober_.SetTargets({Target("b")}, now_);
  SendProbes(1);
  ASSERT_EQ(sender_.sent.size(), 1u);
  now_ += kRtt;
  Answer(sender_.sent[0], now_);
  Answer(sender_.sent[0], now_);
  EXPECT_EQ(prober_.series(0).counters().answered, 1u);
  EXPECT_EQ(prober_.counters().stray_completions, 1u);
}

TEST_F(ProberTest, AnswersInAnotherOrderThanTheProbesAreReordered) {
  prober_.SetTargets({Target("b", ProbeTransport::kHoma, 10 * kNsPerMs)}, now_);
  SendProbes(3);
  ASSERT_EQ(sender_.sent.size(), 3u);
  now_ += kRtt;
  Answer(sender_.sent[2], now_);
  Answer(sender_.sent[0], now_);
  Answer(sender_.sent[1], now_);
  EXPECT_EQ(prober_.series(0).counters().answered, 3u);
  EXPECT_EQ(prober_.series(0).counters().reordered, 2u);
}

TEST_F(ProberTest, AnAnswerFromSomethingElseIsABadAnswerNotASuccess) {
  prober_.SetTargets({Target("b")}, now_);
  SendProbes(1);
  ASSERT_EQ(sender_.sent.size(), 1u);
  // Another prober's epoch.
  std::vector<std::byte> answer(wire::kMeshAnswerBytes);
  ASSERT_TRUE(wire::EncodeMeshAnswer({.epoch = 7, .sequence = 1}, answer).ok());
  prober_.OnComplete(sender_.sent[0].op_id, OkStatus(), answer, now_);
  EXPECT_EQ(prober_.counters().bad_answers, 1u);
  EXPECT_EQ(prober_.series(0).counters().answered, 0u);
  EXPECT_EQ(prober_.series(0).counters().failed, 1u);
}

TEST_F(ProberTest, APeerThatStopsAnsweringAndComesBackShowsBothPhases) {
  prober_.SetTargets({Target("b")}, now_);
  RunFor(5 * kNsPerSec);
  EXPECT_EQ(prober_.series(0).State(Window::k10s, now_), SeriesState::kOk);
  // Silent for 20 s: the 10 s window holds only losses.
  RunFor(20 * kNsPerSec, [](const SentProbe&) { return true; });
  EXPECT_EQ(prober_.series(0).State(Window::k10s, now_), SeriesState::kAllFailed);
  EXPECT_EQ(prober_.series(0).State(Window::k1m, now_), SeriesState::kOk);
  const uint64_t lost = prober_.series(0).counters().lost;
  EXPECT_NEAR(static_cast<double>(lost), 200, 5);
  // Back: answers again, and the losses stay counted.
  RunFor(5 * kNsPerSec);
  EXPECT_EQ(prober_.series(0).State(Window::k10s, now_), SeriesState::kOk);
  EXPECT_GE(prober_.series(0).counters().lost, lost);
  const WindowSummary w = prober_.series(0).rtt().Summary(Window::k10s, now_);
  EXPECT_GT(w.answered, 0u);
  EXPECT_GT(w.lost, 0u);
}

TEST_F(ProberTest, AChangedListKeepsTheSeriesOfTargetsThatStay) {
  prober_.SetTargets({Target("b"), Target("c")}, now_);
  RunFor(2 * kNsPerSec);
  const uint64_t b_sent = prober_.series(0).counters().sent;
  ASSERT_GT(b_sent, 10u);
  // c leaves while one of its probes is out; d arrives.
  prober_.Poll(now_ + kNsPerSec);
  std::vector<SentProbe> out;
  for (SentProbe& p : sender_.sent) out.push_back(std::move(p));
  sender_.sent.clear();
  prober_.SetTargets({Target("d"), Target("b")}, now_);
  ASSERT_EQ(prober_.size(), 2u);
  EXPECT_EQ(prober_.target(0).host, "d");
  EXPECT_EQ(prober_.series(0).counters().sent, 0u);
  EXPECT_EQ(prober_.target(1).host, "b");
  EXPECT_GE(prober_.series(1).counters().sent, b_sent);
  // Completions for c's probes are strays now, and harm nothing.
  const uint64_t strays = prober_.counters().stray_completions;
  for (const SentProbe& p : out) {
    if (p.host == "c") prober_.OnComplete(p.op_id, OkStatus(), {}, now_);
  }
  EXPECT_GT(prober_.counters().stray_completions, strays);
  pending_.clear();
  RunFor(2 * kNsPerSec);
  EXPECT_GT(prober_.series(0).counters().answered, 10u);
}

TEST_F(ProberTest, AtMostMaxInFlightProbesWaitPerTarget) {
  // Probes every 1 ms, never answered, 50 ms timeout never reached: the
  // 65th is skipped, not sent.
  prober_.SetTargets({Target("b", ProbeTransport::kHoma, kNsPerMs)}, now_);
  for (int i = 0; i < 100; ++i) {
    now_ += kNsPerMs;
    prober_.Poll(now_);
  }
  EXPECT_EQ(sender_.sent.size(), ProbeSeries::kMaxInFlight);
  EXPECT_GT(prober_.series(0).counters().skipped, 0u);
  EXPECT_EQ(prober_.in_flight(), ProbeSeries::kMaxInFlight);
}

// A hundred targets probed every 10 ms each, 10,000 probes a second: a
// loop that polls when the prober asks wakes about once per millisecond for
// ten of them, not once per probe.
TEST_F(ProberTest, ProbesDueWithinTheNextMillisecondLeaveTogether) {
  std::vector<ProbeTargetSpec> hundred;
  for (int i = 0; i < 100; ++i) {
    hundred.push_back(Target("h" + std::to_string(i), ProbeTransport::kHoma, 10 * kNsPerMs));
  }
  prober_.SetTargets(hundred, now_);
  int polls = 0;
  std::map<std::string, TimeNs> last;
  DurationNs closest = kNever;
  const TimeNs end = now_ + kNsPerSec;
  while (now_ < end) {
    transport::PollResult r = prober_.Poll(now_);
    ++polls;
    for (const SentProbe& p : sender_.sent) {
      if (last.count(p.host) > 0) closest = std::min(closest, now_ - last[p.host]);
      last[p.host] = now_;
      // Lost at once: what the answers are does not matter here.
      prober_.OnComplete(p.op_id, DeadlineExceededError("probe"), {}, now_);
    }
    sender_.sent.clear();
    now_ = std::max(now_ + 1, r.next_deadline);
  }
  EXPECT_NEAR(static_cast<double>(prober_.counters().probes_sent), 10000, 200);
  EXPECT_LT(polls, 1200) << "not batched: a wake-up per probe or close to it";
  // A target's probes stay close to its interval apart: at least 9 ms (the
  // jitter) less the millisecond sent ahead.
  EXPECT_GE(closest, 8 * kNsPerMs);
}

TEST_F(ProberTest, OnePollSendsAtMostItsShare) {
  std::vector<ProbeTargetSpec> many;
  for (int i = 0; i < 100; ++i) many.push_back(Target("h" + std::to_string(i)));
  prober_.SetTargets(many, now_);
  // A loop that comes back a full interval later finds all 100 due.
  transport::PollResult r = prober_.Poll(now_ + 100 * kNsPerMs);
  EXPECT_EQ(r.work, 32);
  // The other 68 are still due: the loop comes back at once.
  EXPECT_LE(r.next_deadline, now_ + 100 * kNsPerMs);
  EXPECT_EQ(prober_.Poll(now_ + 100 * kNsPerMs).work, 32);
}

}  // namespace
}  // namespace wharf::mesh
