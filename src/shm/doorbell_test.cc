// Tests for Doorbell (ring, drain, saturation, adopting a received fd) and,
// across two processes, for the sleep/wake protocol of spsc_ring.h: both
// sides of a ping-pong sleep on doorbells, and a sleep that has to run into
// its poll() timeout while an entry waits in the ring is a lost wake-up and
// fails the test.
#include "shm/doorbell.h"

#include <fcntl.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <array>
#include <cstring>
#include <memory>
#include <random>

#include "shm/forked_child_testing.h"
#include "shm/region.h"
#include "shm/spsc_ring.h"

namespace wharf::shm {
namespace {

using ::testing::HasSubstr;
using testutil::ForkedChild;

Doorbell MakeBell() { return Doorbell::Create().value(); }

// Create / Ring / Drain / Wait

TEST(DoorbellTest, StartsQuietAndIsNonBlockingCloexec) {
  Doorbell bell = MakeBell();
  ASSERT_GE(bell.fd(), 0);
  EXPECT_NE(::fcntl(bell.fd(), F_GETFL) & O_NONBLOCK, 0);
  EXPECT_NE(::fcntl(bell.fd(), F_GETFD) & FD_CLOEXEC, 0);
  EXPECT_FALSE(bell.Drain());
  EXPECT_FALSE(bell.Wait(0).value());
}

TEST(DoorbellTest, RingWakesAndDrainResets) {
  Doorbell bell = MakeBell();
  ASSERT_TRUE(bell.Ring().ok());
  ASSERT_TRUE(bell.Ring().ok());
  EXPECT_TRUE(bell.Wait(0).value());
  EXPECT_TRUE(bell.Wait(-1).value());  // rung: returns at once
  EXPECT_TRUE(bell.Drain());           // both rings in one read
  EXPECT_FALSE(bell.Drain());
  EXPECT_FALSE(bell.Wait(1).value());
}

TEST(DoorbellTest, SaturatedCounterCountsAsRungAndDoesNotBlock) {
  Doorbell bell = MakeBell();
  // What a hostile peer holding the same eventfd can do.
  const uint64_t max = 0xfffffffffffffffeull;
  ASSERT_EQ(::write(bell.fd(), &max, sizeof(max)), static_cast<ssize_t>(sizeof(max)));
  EXPECT_TRUE(bell.Ring().ok());
  EXPECT_TRUE(bell.Ring().ok());
  EXPECT_TRUE(bell.Drain());
  EXPECT_TRUE(bell.Ring().ok());
  EXPECT_TRUE(bell.Drain());
}

TEST(DoorbellTest, MovedFromKeepsTheFdInTheNewOwner) {
  Doorbell a = MakeBell();
  const int fd = a.fd();
  Doorbell b = std::move(a);
  EXPECT_EQ(b.fd(), fd);
  ASSERT_TRUE(b.Ring().ok());
  EXPECT_TRUE(b.Drain());
}

// Adopt

TEST(DoorbellAdoptTest, AdoptsAnEventfdAndMakesItNonBlocking) {
  const int fd = ::eventfd(0, EFD_CLOEXEC);  // blocking, as a careless peer might send it
  ASSERT_GE(fd, 0);
  Result<Doorbell> bell = Doorbell::Adopt(UniqueFd(fd));
  ASSERT_TRUE(bell.ok()) << bell.status();
  EXPECT_EQ(bell->fd(), fd);
  EXPECT_NE(::fcntl(fd, F_GETFL) & O_NONBLOCK, 0);
  EXPECT_FALSE(bell->Drain());  // would block forever if still blocking
  ASSERT_TRUE(bell->Ring().ok());
  EXPECT_TRUE(bell->Drain());
}

TEST(DoorbellAdoptTest, RefusesWhatIsNotAnEventfd) {
  int pipe_fds[2];
  ASSERT_EQ(::pipe2(pipe_fds, O_CLOEXEC), 0);
  ::close(pipe_fds[1]);
  Result<Doorbell> pipe = Doorbell::Adopt(UniqueFd(pipe_fds[0]));
  EXPECT_EQ(pipe.status().code(), StatusCode::kInvalidArgument);
  EXPECT_THAT(pipe.status().message(), HasSubstr("is not an eventfd (pipe:"));

  Result<Doorbell> memfd = Doorbell::Adopt(UniqueFd(::memfd_create("not-a-bell", MFD_CLOEXEC)));
  EXPECT_THAT(memfd.status().message(), HasSubstr("is not an eventfd (/memfd:not-a-bell"));

  EXPECT_EQ(Doorbell::Adopt(UniqueFd()).status().code(), StatusCode::kInvalidArgument);
}

// Cross-process: the sleep/wake protocol. The parent plays the application
// (producer on the command ring, consumer on the completion ring), the
// child the daemon; each side has a doorbell the other rings.

constexpr Geometry kGeometry{.command_entries = 64, .completion_entries = 64, .heap_bytes = 65536};
constexpr uint64_t kHalf = kGeometry.heap_bytes / 2;
constexpr uint64_t kPayloadBytes = 256;
// A sleep this long with an entry waiting can only be a lost wake-up: the
// peer published it and rang (or should have) long before.
constexpr int kLostWakeupMs = 1000;
constexpr DurationNs kBudgetNs = 60 * kNsPerSec;

// One side's consuming end with its doorbell. Pop sleeps whenever the ring
// is empty after `spins` extra tries (randomized by the stress test so that
// the two sides' races land everywhere), following the protocol: announce,
// look again, sleep, withdraw, drain.
struct SleepyConsumer {
  SpscConsumer ring;
  Doorbell& bell;
  uint64_t sleeps = 0;        // times it went to sleep
  uint64_t lost_wakeups = 0;  // sleeps that timed out with an entry waiting

  // False on a lost wake-up or when `deadline` expires.
  bool Pop(Descriptor& out, int spins, const testutil::Deadline& deadline) {
    for (int i = 0; i <= spins; ++i) {
      if (ring.TryPop(std::span(&out, 1)) == 1) return true;
    }
    while (!deadline.Expired()) {
      ring.SetWaiting(true);
      if (ring.TryPop(std::span(&out, 1)) == 1) {
        ring.SetWaiting(false);
        return true;
      }
      ++sleeps;
      const bool rung = bell.Wait(kLostWakeupMs).value_or(false);
      ring.SetWaiting(false);
      bell.Drain();
      if (ring.TryPop(std::span(&out, 1)) == 1) {
        if (!rung) {
          ++lost_wakeups;
          return false;
        }
        return true;
      }
    }
    return false;
  }
};

// Pushes one entry and rings the peer if it said it sleeps.
bool PushAndRing(SpscProducer& ring, Doorbell& peer_bell, const Descriptor& d) {
  if (!ring.TryPush(d)) return false;  // a ping-pong never fills the ring
  if (ring.PeerWaiting()) return peer_bell.Ring().ok();
  return true;
}

void Fill(std::span<std::byte> bytes, uint64_t seq) {
  for (size_t i = 0; i < bytes.size(); ++i) bytes[i] = static_cast<std::byte>(seq * 31 + i);
}
bool Check(std::span<const std::byte> bytes, uint64_t seq) {
  for (size_t i = 0; i < bytes.size(); ++i) {
    if (bytes[i] != static_cast<std::byte>(seq * 31 + i)) return false;
  }
  return true;
}

// What the child leaves at the start of the receive half for the parent.
struct ChildStats {
  uint64_t sleeps;
  uint64_t lost_wakeups;
};

// Child exit codes.
constexpr int kChildAttachFailed = 10;
constexpr int kChildLostOrTimedOut = 11;
constexpr int kChildBadRequest = 12;
constexpr int kChildPushFailed = 13;

// The child: echoes `rounds` requests, the payload copied from the send
// half into the receive half; `seed` != 0 randomizes its spins.
int EchoSleeping(int fd, Doorbell& my_bell, Doorbell& parent_bell, uint64_t rounds, uint32_t seed) {
  Result<std::unique_ptr<Region>> region = Region::Attach(fd, kGeometry);
  if (!region.ok()) return kChildAttachFailed;
  SleepyConsumer requests{SpscConsumer((*region)->command_ring()), my_bell};
  SpscProducer replies((*region)->completion_ring());
  std::mt19937 rng(seed);
  const testutil::Deadline deadline(kBudgetNs);
  int code = 0;
  for (uint64_t seq = 1; seq <= rounds && code == 0; ++seq) {
    Descriptor d;
    if (!requests.Pop(d, seed == 0 ? 0 : static_cast<int>(rng() % 64), deadline)) {
      code = kChildLostOrTimedOut;
      break;
    }
    Result<std::span<std::byte>> in = (*region)->HeapRange(d.heap_offset, d.length);
    if (d.cookie != seq || !in.ok() || !Check(*in, seq)) {
      code = kChildBadRequest;
      break;
    }
    const uint64_t reply_offset = kHalf + 64 + (seq % 8) * kPayloadBytes;
    std::memcpy((*region)->heap().data() + reply_offset, in->data(), in->size());
    Descriptor r = d;
    r.heap_offset = reply_offset;
    if (!PushAndRing(replies, parent_bell, r)) code = kChildPushFailed;
  }
  const ChildStats stats{requests.sleeps, requests.lost_wakeups};
  std::memcpy((*region)->heap().data() + kHalf, &stats, sizeof(stats));
  return code;
}

struct PingPongOutcome {
  uint64_t completed = 0;
  uint64_t parent_sleeps = 0;
  uint64_t parent_lost_wakeups = 0;
  ChildStats child{};
  std::string child_exit;
};

PingPongOutcome RunSleepingPingPong(uint64_t rounds, uint32_t seed) {
  PingPongOutcome outcome;
  std::unique_ptr<Region> region = Region::Create(kGeometry, "doorbell-pingpong").value();
  Doorbell parent_bell = MakeBell();
  Doorbell child_bell = MakeBell();
  const int fd = region->fd();
  ForkedChild child([&] { return EchoSleeping(fd, child_bell, parent_bell, rounds, seed); });
  if (!child.started()) return outcome;

  SpscProducer requests(region->command_ring());
  SleepyConsumer replies{SpscConsumer(region->completion_ring()), parent_bell};
  std::mt19937 rng(seed + 1);
  const testutil::Deadline deadline(kBudgetNs);
  for (uint64_t seq = 1; seq <= rounds; ++seq) {
    const uint64_t offset = (seq % 8) * kPayloadBytes;
    Fill(region->heap().subspan(offset, kPayloadBytes), seq);
    Descriptor d{};
    d.opcode = static_cast<uint16_t>(Opcode::kNop);
    d.cookie = seq;
    d.heap_offset = offset;
    d.length = kPayloadBytes;
    if (!PushAndRing(requests, child_bell, d)) break;
    Descriptor r;
    if (!replies.Pop(r, seed == 0 ? 0 : static_cast<int>(rng() % 64), deadline)) break;
    if (r.cookie != seq || r.heap_offset < kHalf ||
        !Check(region->HeapRange(r.heap_offset, r.length).value(), seq)) {
      break;
    }
    outcome.completed = seq;
  }
  outcome.child_exit = child.Wait(10 * kNsPerSec);
  outcome.parent_sleeps = replies.sleeps;
  outcome.parent_lost_wakeups = replies.lost_wakeups;
  std::memcpy(&outcome.child, region->heap().data() + kHalf, sizeof(outcome.child));
  return outcome;
}

TEST(DoorbellCrossProcessTest, PingPongWhereBothSidesSleep) {
  const uint64_t kRounds = 2000;
  const PingPongOutcome o = RunSleepingPingPong(kRounds, 0);
  EXPECT_EQ(o.completed, kRounds);
  EXPECT_EQ(o.child_exit, "exit 0");
  EXPECT_EQ(o.parent_lost_wakeups, 0u);
  EXPECT_EQ(o.child.lost_wakeups, 0u);
  // Neither side spins, so both really slept (not every time: the peer may
  // be quick enough for the re-check after SetWaiting to find the entry).
  EXPECT_GT(o.parent_sleeps, 0u);
  EXPECT_GT(o.child.sleeps, 0u);
}

// Many round trips with the spin before sleeping randomized on both sides,
// so that the consumer's announce-and-recheck and the producer's
// publish-and-check land in every order. One lost wake-up fails it.
TEST(DoorbellCrossProcessTest, StressNoLostWakeups) {
  const uint64_t kRounds = 20000;
  for (uint32_t seed : {1u, 7u}) {
    const PingPongOutcome o = RunSleepingPingPong(kRounds, seed);
    EXPECT_EQ(o.completed, kRounds) << "seed " << seed;
    EXPECT_EQ(o.child_exit, "exit 0") << "seed " << seed;
    EXPECT_EQ(o.parent_lost_wakeups, 0u) << "seed " << seed;
    EXPECT_EQ(o.child.lost_wakeups, 0u) << "seed " << seed;
    EXPECT_GT(o.parent_sleeps + o.child.sleeps, 0u) << "seed " << seed;
  }
}

}  // namespace
}  // namespace wharf::shm
