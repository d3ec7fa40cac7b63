// GsoStaging: which messages it copies, that the copy is the concatenation
// of the parts, and that it asks for a new batch when its room is used up.
#include "transport/udp/udp_gso_staging.h"

#include <gtest/gtest.h>

#include <cstring>
#include <utility>
#include <vector>

namespace wharf::transport::udp {
namespace {

using Outcome = GsoStaging::Outcome;

// `parts` buffers of `size` bytes each, byte j of part i = i * 31 + j.
struct Parts {
  Parts(size_t parts, size_t size) : buffers(parts, std::vector<std::byte>(size)) {
    for (size_t i = 0; i < parts; ++i) {
      for (size_t j = 0; j < size; ++j) buffers[i][j] = static_cast<std::byte>(i * 31 + j);
      iovs.push_back({buffers[i].data(), size});
    }
  }
  std::vector<std::byte> Joined() const {
    std::vector<std::byte> out;
    for (const auto& b : buffers) out.insert(out.end(), b.begin(), b.end());
    return out;
  }
  std::vector<std::vector<std::byte>> buffers;
  std::vector<iovec> iovs;
};

std::vector<std::byte> Bytes(const iovec& iov) {
  const auto* p = static_cast<const std::byte*>(iov.iov_base);
  return {p, p + iov.iov_len};
}

// Stages all of `parts`' iovecs; returns the outcome and the iovec count after.
std::pair<Outcome, size_t> StageAll(GsoStaging& staging, Parts& parts) {
  size_t count = parts.iovs.size();
  const Outcome outcome = staging.Stage(parts.iovs.data(), &count);
  return {outcome, count};
}

TEST(GsoStagingTest, ManyPartsOverTheThresholdBecomeOneIovecHoldingTheirConcatenation) {
  GsoStaging staging(8192);
  Parts parts(88, 721);  // 44 datagrams of a 30-byte-ish header and payload
  EXPECT_EQ(StageAll(staging, parts), std::pair(Outcome::kCopied, size_t{1}));
  EXPECT_EQ(Bytes(parts.iovs[0]), parts.Joined());
}

TEST(GsoStagingTest, MessagesUnderTheThresholdOrInOneIovecAreLeftAlone) {
  GsoStaging staging(8192);
  Parts small(8, 100);
  EXPECT_EQ(StageAll(staging, small), std::pair(Outcome::kKept, size_t{8}));
  EXPECT_EQ(small.iovs[0].iov_base, small.buffers[0].data());

  Parts one(1, 60000);
  EXPECT_EQ(StageAll(staging, one), std::pair(Outcome::kKept, size_t{1}));
  EXPECT_EQ(one.iovs[0].iov_base, one.buffers[0].data());
}

TEST(GsoStagingTest, ZeroThresholdNeverCopies) {
  GsoStaging staging(0);
  Parts parts(88, 721);
  EXPECT_EQ(StageAll(staging, parts), std::pair(Outcome::kKept, size_t{88}));
}

TEST(GsoStagingTest, UsedUpRoomAsksForANewBatchAndResetFreesIt) {
  GsoStaging staging(1, GsoStaging::kMinCapacity);  // 64 KiB of room
  Parts first(40, 1000);
  Parts second(40, 1000);
  ASSERT_EQ(StageAll(staging, first).first, Outcome::kCopied);
  EXPECT_EQ(StageAll(staging, second), std::pair(Outcome::kFull, size_t{40}));  // untouched
  EXPECT_EQ(second.iovs[0].iov_base, second.buffers[0].data());
  // The first copy stays intact until Reset.
  EXPECT_EQ(Bytes(first.iovs[0]), first.Joined());

  staging.Reset();
  ASSERT_EQ(StageAll(staging, second).first, Outcome::kCopied);
  EXPECT_EQ(Bytes(second.iovs[0]), second.Joined());
}

TEST(GsoStagingTest, CapacityIsAtLeastOneMaximalDatagram) {
  GsoStaging staging(1, 1024);
  Parts parts(2, 65507 / 2);
  EXPECT_EQ(StageAll(staging, parts).first, Outcome::kCopied);
}

}  // namespace
}  // namespace wharf::transport::udp
