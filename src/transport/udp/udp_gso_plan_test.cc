// Tests for the GSO grouping rules (udp_gso_plan.h).
#include "transport/udp/udp_gso_plan.h"

#include <gtest/gtest.h>

#include <vector>

namespace wharf::transport::udp {
namespace {

const NetAddress kPeerA = NetAddress::Ipv4(0xC6120001, 4000);  // 198.18.0.1:4000
const NetAddress kPeerB = NetAddress::Ipv4(0xC6120002, 4000);  // 198.18.0.2:4000

// Datagrams of the given sizes to one peer, all pointing into one buffer
// (the planner only looks at sizes, destinations and priorities).
class Batch {
 public:
  explicit Batch(const std::vector<size_t>& sizes) : storage_(65536) {
    for (size_t size : sizes) {
      datagrams_.push_back(OutDatagram{kPeerA, std::span(storage_.data(), size), 0});
    }
  }
  std::vector<OutDatagram>& datagrams() { return datagrams_; }
  size_t Run(bool gso = true, const GsoLimits& limits = GsoLimits()) {
    return NextGsoRun(datagrams_, gso, limits);
  }

 private:
  std::vector<std::byte> storage_;
  std::vector<OutDatagram> datagrams_;
};

TEST(NextGsoRunTest, EmptyBatchHasNoRun) { EXPECT_EQ(NextGsoRun({}, true, GsoLimits()), 0u); }

TEST(NextGsoRunTest, WithoutGsoEveryDatagramIsItsOwnMessage) {
  Batch batch({1400, 1400, 1400});
  EXPECT_EQ(batch.Run(/*gso=*/false), 1u);
}

TEST(NextGsoRunTest, EqualSizesWithShortTailFormOneRun) {
  std::vector<size_t> sizes(40, 1400);
  sizes.push_back(300);
  Batch batch(sizes);
  EXPECT_EQ(batch.Run(), 41u);
}

TEST(NextGsoRunTest, ShortDatagramEndsTheRun) {
  Batch batch({1400, 1400, 300, 1400});
  EXPECT_EQ(batch.Run(), 3u);
}

TEST(NextGsoRunTest, LongerDatagramStartsANewRun) {
  Batch batch({1000, 1400, 1400});
  EXPECT_EQ(batch.Run(), 1u);
}

TEST(NextGsoRunTest, DestinationChangeEndsTheRun) {
  Batch batch({1400, 1400, 1400});
  batch.datagrams()[2].to = kPeerB;
  EXPECT_EQ(batch.Run(), 2u);
}

TEST(NextGsoRunTest, PriorityChangeEndsTheRun) {
  Batch batch({1400, 1400, 1400});
  batch.datagrams()[1].priority = 3;
  EXPECT_EQ(batch.Run(), 1u);
}

TEST(NextGsoRunTest, EmptyDatagramIsNeverCoalesced) {
  // Empty first: no segment size. Empty later: the kernel would emit no
  // packet for it.
  Batch leading({0, 0, 0});
  EXPECT_EQ(leading.Run(), 1u);
  Batch trailing({1400, 1400, 0});
  EXPECT_EQ(trailing.Run(), 2u);
}

TEST(NextGsoRunTest, RunStopsAtTheSegmentLimit) {
  Batch batch(std::vector<size_t>(100, 500));
  EXPECT_EQ(batch.Run(), 64u);
  EXPECT_EQ(batch.Run(true, GsoLimits{.max_segments = 8, .max_payload_bytes = 65507}), 8u);
}

TEST(NextGsoRunTest, RunStopsBeforeTheByteLimit) {
  // 46 * 1400 = 64400 fits in 65507; 47 * 1400 = 65800 does not.
  Batch batch(std::vector<size_t>(50, 1400));
  EXPECT_EQ(batch.Run(), 46u);
}

TEST(NextGsoRunTest, SingleDatagramIsARunOfOne) {
  Batch batch({1400});
  EXPECT_EQ(batch.Run(), 1u);
}

TEST(AppendPartTest, PartsThatTouchShareAnIovecOthersGetTheirOwn) {
  std::vector<std::byte> bytes(100);
  iovec iovs[4] = {};
  const std::span<const std::byte> all(bytes);
  size_t n = AppendPart(iovs, 0, all.subspan(0, 30));
  n = AppendPart(iovs, n, all.subspan(30, 20));  // touches: joined
  n = AppendPart(iovs, n, {});                   // empty: nothing
  ASSERT_EQ(n, 1u);
  EXPECT_EQ(iovs[0].iov_base, bytes.data());
  EXPECT_EQ(iovs[0].iov_len, 50u);
  n = AppendPart(iovs, n, all.subspan(60, 10));  // a gap: its own
  n = AppendPart(iovs, n, all.subspan(0, 10));   // before the last: its own
  ASSERT_EQ(n, 3u);
  EXPECT_EQ(iovs[1].iov_base, bytes.data() + 60);
  EXPECT_EQ(iovs[1].iov_len, 10u);
  EXPECT_EQ(iovs[2].iov_base, bytes.data());
  EXPECT_EQ(iovs[2].iov_len, 10u);
}

}  // namespace
}  // namespace wharf::transport::udp
