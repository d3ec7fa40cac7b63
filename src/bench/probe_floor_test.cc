// The probe floor: every probe answered and stamped both ways, CPU counted
// for both threads, stamps off when asked, bad options refused.
#include "bench/probe_floor.h"

#include <gtest/gtest.h>

namespace wharf::bench {
namespace {

ProbeFloorOptions Short() {
  ProbeFloorOptions o;
  o.rate = 2'000;
  o.duration_ns = 300 * kNsPerMs;
  o.warmup_ns = 50 * kNsPerMs;
  o.prober_cpu = -1;  // the suite runs tests side by side: no pinning
  o.responder_cpu = -1;
  return o;
}

TEST(ProbeFloorTest, EveryProbeIsAnsweredAndStampedBothWays) {
  Result<ProbeFloorResult> r = MeasureProbeFloor(Short());
  ASSERT_TRUE(r.ok()) << r.status();
  // 2,000 a second for 0.3 s, in passes of 1 ms: about 600.
  EXPECT_GT(r->probes_sent, 300u);
  EXPECT_LT(r->probes_sent, 1'200u);
  // Answers in flight at either end of the window may fall on either side.
  EXPECT_NEAR(static_cast<double>(r->answers), static_cast<double>(r->probes_sent), 20);
  EXPECT_NEAR(static_cast<double>(r->transmit_stamps), static_cast<double>(r->probes_sent), 20);
  EXPECT_EQ(r->receive_stamps, r->answers);
  EXPECT_GT(r->prober_cpu_ns, 0);
  EXPECT_GT(r->responder_cpu_ns, 0);
  EXPECT_GT(r->ProberNsPerProbe(), 0);
  EXPECT_GT(r->measured_ns, 250 * kNsPerMs);
}

TEST(ProbeFloorTest, WithoutTransmitStampsNoneArrive) {
  ProbeFloorOptions o = Short();
  o.transmit_stamps = false;
  Result<ProbeFloorResult> r = MeasureProbeFloor(o);
  ASSERT_TRUE(r.ok()) << r.status();
  EXPECT_GT(r->answers, 0u);
  EXPECT_EQ(r->transmit_stamps, 0u);
}

TEST(ProbeFloorTest, BadOptionsAreRefused) {
  for (auto change : std::initializer_list<void (*)(ProbeFloorOptions&)>{
           [](ProbeFloorOptions& o) { o.rate = 0; },
           [](ProbeFloorOptions& o) { o.pass_ns = 0; },
           [](ProbeFloorOptions& o) { o.probe_bytes = 0; },
           [](ProbeFloorOptions& o) { o.probe_bytes = 4'096; },
           [](ProbeFloorOptions& o) { o.host = "localhost"; }}) {
    ProbeFloorOptions o = Short();
    change(o);
    Result<ProbeFloorResult> r = MeasureProbeFloor(o);
    ASSERT_FALSE(r.ok());
    EXPECT_EQ(r.status().code(), StatusCode::kInvalidArgument) << r.status();
  }
}

}  // namespace
}  // namespace wharf::bench
