#include "mesh/passive_book.h"

#include <gtest/gtest.h>

#include <cstdint>
#include <set>
#include <string>

namespace wharf::mesh {
namespace {

using transport::NetAddress;

constexpr DurationNs kSec = kNsPerSec;
constexpr uint64_t kUs = kNsPerUs;

NetAddress Peer(uint32_t n) { return NetAddress::Ipv4(0xC6120000 + n, 4000); }

CompactHistogram RoundTrips(std::initializer_list<uint64_t> ns) {
  CompactHistogram h;
  for (uint64_t v : ns) h.Record(v);
  return h;
}

TEST(PassiveBookTest, BatchesFromManyEnginesAddUpPerPeerAndTransport) {
  PassiveBook book({});
  // Two applications' engines called the same peer in the same second.
  book.Add(kSec, "homa", Peer(1), RoundTrips({20 * kUs, 30 * kUs}), 0);
  book.Add(kSec, "homa", Peer(1), RoundTrips({40 * kUs}), 1);
  book.Add(kSec, "tcp", Peer(1), RoundTrips({90 * kUs}), 0);
  ASSERT_EQ(book.size(), 2u);
  const PassiveSeries* homa = book.Find("homa", Peer(1));
  ASSERT_NE(homa, nullptr);
  EXPECT_EQ(homa->round_trips(), 3u);
  EXPECT_EQ(homa->failures(), 1u);
  const WindowSummary s = homa->rtt().Summary(Window::k10s, kSec);
  EXPECT_EQ(s.answered, 3u);
  EXPECT_EQ(s.lost, 1u);
  EXPECT_EQ(s.min_ns, 20 * kUs);
  EXPECT_EQ(s.max_ns, 40 * kUs);
  EXPECT_EQ(homa->rtt_buckets().count, 3u);
  EXPECT_EQ(book.Find("tcp", Peer(1))->rtt().Summary(Window::k10s, kSec).max_ns, 90 * kUs);
  EXPECT_EQ(book.Find("homa", Peer(2)), nullptr);
  EXPECT_EQ(book.Find("tcp", Peer(2)), nullptr);
}

TEST(PassiveBookTest, BatchesMoveThroughTheWindowsLikeSingleValues) {
  PassiveBook book({});
  book.Add(0, "homa", Peer(1), RoundTrips({100 * kUs}), 0);
  book.Add(30 * kSec, "homa", Peer(1), RoundTrips({200 * kUs}), 0);
  const PassiveSeries& s = *book.Find("homa", Peer(1));
  EXPECT_EQ(s.rtt().Summary(Window::k10s, 30 * kSec).answered, 1u);
  EXPECT_EQ(s.rtt().Summary(Window::k1m, 30 * kSec).answered, 2u);
  EXPECT_EQ(s.rtt().History(30 * kSec).front().answered, 1u);
}

TEST(PassiveBookTest, AFullBookKeepsNoNewPeer) {
  PassiveBook book({.max_peers = 2});
  book.Add(0, "homa", Peer(1), RoundTrips({1}), 0);
  book.Add(0, "homa", Peer(2), RoundTrips({1}), 0);
  book.Add(0, "homa", Peer(3), RoundTrips({1}), 0);
  book.Add(0, "tcp", Peer(1), RoundTrips({1}), 0);
  EXPECT_EQ(book.size(), 2u);
  EXPECT_EQ(book.counters().untracked, 2u);
  book.Add(0, "homa", Peer(1), RoundTrips({1}), 0);  // a known one still counts
  EXPECT_EQ(book.Find("homa", Peer(1))->round_trips(), 2u);
}

TEST(PassiveBookTest, IdlePeersAreForgottenAndTheRestStayFindable) {
  PassiveBook book({.max_peers = 8, .idle_timeout_ns = 100 * kSec});
  for (uint32_t n = 1; n <= 4; ++n) book.Add(0, "homa", Peer(n), RoundTrips({n * kUs}), 0);
  book.Add(60 * kSec, "homa", Peer(1), RoundTrips({kUs}), 0);
  book.Add(60 * kSec, "homa", Peer(3), RoundTrips({3 * kUs}), 0);
  book.ForgetIdle(120 * kSec);  // 2 and 4 idle for 120 s
  EXPECT_EQ(book.size(), 2u);
  EXPECT_EQ(book.counters().evicted, 2u);
  EXPECT_EQ(book.Find("homa", Peer(2)), nullptr);
  EXPECT_EQ(book.Find("homa", Peer(4)), nullptr);
  ASSERT_NE(book.Find("homa", Peer(1)), nullptr);
  ASSERT_NE(book.Find("homa", Peer(3)), nullptr);
  EXPECT_EQ(book.Find("homa", Peer(3))->rtt().Summary(Window::k10m, 120 * kSec).max_ns, 3 * kUs);
  std::set<std::string> listed;
  for (size_t i = 0; i < book.size(); ++i) listed.insert(book.series(i).peer().ToString());
  EXPECT_EQ(listed, (std::set<std::string>{Peer(1).ToString(), Peer(3).ToString()}));
  // Room again for a new one.
  book.Add(130 * kSec, "homa", Peer(5), RoundTrips({kUs}), 0);
  EXPECT_EQ(book.size(), 3u);
}

TEST(LatencyBucketsTest, AHistogramLandsInTheBucketsItsValuesWould) {
  // Values well inside Prometheus buckets (the midpoint of their own
  // CompactHistogram bucket is within 1/16, which no bound separates).
  const std::initializer_list<uint64_t> values = {700, 1'800, 1'900, 40'000, 3'000'000, 3'100'000,
                                                   20'000'000'000ull, 100'000'000'000ull};
  LatencyBuckets one_by_one;
  for (uint64_t v : values) one_by_one.Record(v);
  LatencyBuckets all_at_once;
  all_at_once.RecordAll(RoundTrips(values));
  EXPECT_EQ(all_at_once.counts, one_by_one.counts);
  EXPECT_EQ(all_at_once.count, one_by_one.count);
  // The sum within 1/16 (midpoints for bucketed values, Max for overflow).
  const double ratio = static_cast<double>(all_at_once.sum_ns) / static_cast<double>(one_by_one.sum_ns);
  EXPECT_NEAR(ratio, 1.0, 1.0 / 16);
  LatencyBuckets empty;
  empty.RecordAll(CompactHistogram{});
  EXPECT_EQ(empty.count, 0u);
}

}  // namespace
}  // namespace wharf::mesh
