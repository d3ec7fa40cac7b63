// Waiter: sleeping until an fd is readable, a wake-up or a deadline; the
// exposed fd becoming readable at the deadline; only new fds watched.
#include "engine/waiter.h"

#include <gtest/gtest.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <thread>
#include <vector>

#include "base/sim_clock.h"

namespace wharf::engine {
namespace {

constexpr DurationNs kMs = kNsPerMs;

class WaiterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    auto w = Waiter::Open(clock_);
    ASSERT_TRUE(w.ok()) << w.status();
    waiter_ = std::move(w).value();
    event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
    ASSERT_GE(event_fd_, 0);
  }
  void TearDown() override { close(event_fd_); }

  // How long Sleep(until) took, with BeginSleep/EndSleep around it.
  DurationNs TimedSleep(DurationNs for_ns) {
    const TimeNs start = clock_.NowNs();
    waiter_->BeginSleep();
    waiter_->Sleep(start + for_ns);
    waiter_->EndSleep();
    return clock_.NowNs() - start;
  }

  const Clock& clock_ = SystemClock::Get();
  std::unique_ptr<Waiter> waiter_;
  int event_fd_ = -1;
};

TEST_F(WaiterTest, SleepEndsAtItsDeadline) {
  const DurationNs slept = TimedSleep(20 * kMs);
  EXPECT_GE(slept, 19 * kMs);
  EXPECT_LT(slept, 500 * kMs);
}

TEST_F(WaiterTest, SleepEndsWhenAWatchedFdIsReadable) {
  ASSERT_TRUE(waiter_->Watch({event_fd_}).ok());
  uint64_t one = 1;
  ASSERT_EQ(write(event_fd_, &one, sizeof(one)), 8);
  EXPECT_LT(TimedSleep(5'000 * kMs), 100 * kMs);  // at once, not after 100 ms
}

TEST_F(WaiterTest, ANotedFdIsReportedOnceAfterASleepThatFoundItReadable) {
  const int other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  ASSERT_GE(other, 0);
  ASSERT_TRUE(waiter_->Watch({event_fd_, other}).ok());
  waiter_->NoteReadinessOf(event_fd_);
  uint64_t one = 1;
  // Another fd woke the sleep: the noted one was not seen.
  ASSERT_EQ(write(other, &one, sizeof(one)), 8);
  TimedSleep(5'000 * kMs);
  EXPECT_FALSE(waiter_->TakeNotedReadiness());
  uint64_t drained;
  ASSERT_EQ(read(other, &drained, sizeof(drained)), 8);
  // The noted one did: reported, and only once.
  ASSERT_EQ(write(event_fd_, &one, sizeof(one)), 8);
  TimedSleep(5'000 * kMs);
  EXPECT_TRUE(waiter_->TakeNotedReadiness());
  EXPECT_FALSE(waiter_->TakeNotedReadiness());
  // Still readable (nobody read it): the next sleep reports it again.
  TimedSleep(5'000 * kMs);
  EXPECT_TRUE(waiter_->TakeNotedReadiness());
  // Forgotten: no longer reported.
  waiter_->NoteReadinessOf(-1);
  TimedSleep(5'000 * kMs);
  EXPECT_FALSE(waiter_->TakeNotedReadiness());
  close(other);
}

TEST_F(WaiterTest, UnwatchedFdDoesNotWake) {
  uint64_t one = 1;
  ASSERT_EQ(write(event_fd_, &one, sizeof(one)), 8);
  EXPECT_GE(TimedSleep(30 * kMs), 29 * kMs);
}

TEST_F(WaiterTest, WakeSleepersWakesAThreadAsleep) {
  std::atomic<bool> awake{false};
  std::thread sleeper([&] {
    waiter_->BeginSleep();
    waiter_->Sleep(clock_.NowNs() + 5'000 * kMs);  // capped at 100 ms per call
    waiter_->EndSleep();
    awake = true;
  });
  // Wake until it is up (it may not be asleep yet at the first wake-up).
  const TimeNs start = clock_.NowNs();
  while (!awake && clock_.NowNs() - start < 2'000 * kMs) {
    waiter_->WakeSleepers();
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  sleeper.join();
  EXPECT_TRUE(awake.load());
  EXPECT_LT(clock_.NowNs() - start, 90 * kMs);  // woken, not timed out
}

TEST_F(WaiterTest, ExposedFdBecomesReadableAtTheArmedDeadline) {
  const int fd = waiter_->Expose();
  waiter_->ArmTimer(clock_.NowNs() + 20 * kMs);
  epoll_event ev;
  const TimeNs start = clock_.NowNs();
  ASSERT_EQ(epoll_wait(fd, &ev, 1, 2000), 1);
  EXPECT_GE(clock_.NowNs() - start, 15 * kMs);
  waiter_->ClearReadable();
  EXPECT_EQ(epoll_wait(fd, &ev, 1, 0), 0);  // level-triggered: cleared
}

TEST_F(WaiterTest, ExposedFdReportsWatchedFdsAndWakeUps) {
  const int fd = waiter_->Expose();
  ASSERT_TRUE(waiter_->Watch({event_fd_}).ok());
  epoll_event ev;
  EXPECT_EQ(epoll_wait(fd, &ev, 1, 0), 0);
  waiter_->WakeAlways();
  EXPECT_EQ(epoll_wait(fd, &ev, 1, 0), 1);
  waiter_->ClearReadable();
  EXPECT_EQ(epoll_wait(fd, &ev, 1, 0), 0);
  uint64_t one = 1;
  ASSERT_EQ(write(event_fd_, &one, sizeof(one)), 8);
  EXPECT_EQ(epoll_wait(fd, &ev, 1, 0), 1);
}

TEST_F(WaiterTest, WatchingTheSameFdsAgainIsHarmless) {
  ASSERT_TRUE(waiter_->Watch({event_fd_}).ok());
  ASSERT_TRUE(waiter_->Watch({event_fd_}).ok());
  waiter_->Expose();  // adds each fd to epoll once (a second add would fail)
  const int other = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  EXPECT_TRUE(waiter_->Watch({other, event_fd_}).ok());
  close(other);
}

// Spins `turns` turns of SpinThenBlock, each finding work (so it never
// sleeps).
void SpinTurns(Waiter& waiter, const Clock& clock, int turns) {
  int left = turns;
  (void)waiter.SpinThenBlock(
      [&] { return left == 0; },
      [&] {
        --left;
        return transport::PollResult{.work = 1, .next_deadline = kNever, .now = clock.NowNs()};
      },
      [] {}, [] { return false; }, kNever, /*spin_ns=*/kNsPerSec);
}

// A loop that sleeps between most packets keeps its fds in the epoll set
// (no epoll_ctl per sleep); one that keeps spinning takes them out (no
// epoll callback per packet).
TEST_F(WaiterTest, FdsStayWatchedAfterASleepUntilAThreadKeepsSpinning) {
  ASSERT_TRUE(waiter_->Watch({event_fd_}).ok());
  EXPECT_FALSE(waiter_->fds_in_epoll());
  (void)TimedSleep(1 * kMs);
  EXPECT_TRUE(waiter_->fds_in_epoll());
  SpinTurns(*waiter_, clock_, 100);  // a short spin between sleeps
  EXPECT_TRUE(waiter_->fds_in_epoll());
  SpinTurns(*waiter_, clock_, 300);  // past 256 turns without a sleep
  EXPECT_FALSE(waiter_->fds_in_epoll());
  (void)TimedSleep(1 * kMs);
  EXPECT_TRUE(waiter_->fds_in_epoll());
}

// The spin window may be a callable, asked after every turn that did
// work: a host that expects answers spins longer than one that does not.
TEST_F(WaiterTest, ASpinCallableIsAskedAfterWorkAndDecidesWhenToSleep) {
  for (const DurationNs window : {DurationNs{0}, kNsPerSec}) {
    int turns = 0;
    int asked = 0;
    int sleeps = 0;
    (void)waiter_->SpinThenBlock(
        [&] { return turns == 50 || sleeps > 0; },
        [&] {
          ++turns;
          // Work on odd turns only: the window counts from the last work.
          return transport::PollResult{
              .work = turns % 2, .next_deadline = clock_.NowNs() + kMs, .now = clock_.NowNs()};
        },
        [&] { ++sleeps; }, [] { return false; }, kNever,
        [&] {
          ++asked;
          return window;
        });
    if (window == 0) {
      EXPECT_EQ(sleeps, 1) << "a zero window sleeps at the first turn without work";
      EXPECT_LE(turns, 3);
    } else {
      EXPECT_EQ(sleeps, 0) << "a 1 s window spins through 50 turns";
      EXPECT_EQ(turns, 50);
      EXPECT_EQ(asked, 1 + 25);  // once at the start, then after each turn with work
    }
  }
}

// wharfd's spin: a yield after a turn that handed work to an application,
// otherwise at most every kMaxSpinWithoutYield, or kMaxIdleSpinWithoutYield
// while everyone it serves spins idle (virtual time here).
TEST(WaiterYieldTest, YieldsOnlyAfterAHandoffOrTheBound) {
  SimClock clock;
  clock.AdvanceTo(kNsPerSec);
  auto opened = Waiter::Open(clock);
  ASSERT_TRUE(opened.ok()) << opened.status();
  Waiter& waiter = **opened;
  waiter.set_yield_while_spinning(true);
  waiter.set_yield_only_after_handoff(true);
  // Each step: whether the turn hands off, and how far the clock moves first.
  struct Step {
    bool handed_off;
    DurationNs advance;
    bool served_idle = false;
  };
  auto spin = [&](const std::vector<Step>& steps) {
    size_t next = 0;
    (void)waiter.SpinThenBlock(
        [&] { return next == steps.size(); },
        [&] {
          const Step& s = steps[next++];
          clock.AdvanceBy(s.advance);
          return transport::PollResult{.work = 1,
                                       .next_deadline = kNever,
                                       .now = clock.NowNs(),
                                       .handed_off = s.handed_off,
                                       .served_idle = s.served_idle};
        },
        [] {}, [] { return false; }, kNever, kNsPerSec);
  };
  spin(std::vector<Step>(10, Step{false, kNsPerUs}));  // 10 us without a handoff
  EXPECT_EQ(waiter.yields(), 0u);
  spin({{false, 0}, {true, 0}, {false, 0}});
  EXPECT_EQ(waiter.yields(), 1u) << "the handoff's turn yields";
  spin({{false, Waiter::kMaxSpinWithoutYield}, {false, kNsPerUs}});
  EXPECT_EQ(waiter.yields(), 2u) << "the bound since the wait began";
  // Served processes that spin idle would only yield back: the long bound.
  spin({{false, Waiter::kMaxSpinWithoutYield, true}, {false, kNsPerUs, true}});
  EXPECT_EQ(waiter.yields(), 2u) << "20 us of idle applications is no reason";
  spin({{false, Waiter::kMaxIdleSpinWithoutYield, true}, {false, kNsPerUs, true}});
  EXPECT_EQ(waiter.yields(), 3u) << "the long bound";
  spin({{false, Waiter::kMaxSpinWithoutYield, true}, {true, 0, true}, {false, 0, true}});
  EXPECT_EQ(waiter.yields(), 4u) << "a handoff yields whatever the hint";
  // One of them busy again: the short bound.
  spin({{false, Waiter::kMaxSpinWithoutYield, false}, {false, kNsPerUs}});
  EXPECT_EQ(waiter.yields(), 5u);
  // Without the policy every spinning turn yields (applications).
  waiter.set_yield_only_after_handoff(false);
  spin(std::vector<Step>(5, Step{false, 0}));
  EXPECT_EQ(waiter.yields(), 5u + 4u);  // the last turn finds the wait done
}

TEST_F(WaiterTest, ExposedFdsStayWatchedWhileSpinning) {
  ASSERT_TRUE(waiter_->Watch({event_fd_}).ok());
  (void)waiter_->Expose();
  SpinTurns(*waiter_, clock_, 300);
  EXPECT_TRUE(waiter_->fds_in_epoll());
}

}  // namespace
}  // namespace wharf::engine
