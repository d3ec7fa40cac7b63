#include "client/driver_seat.h"

#include <gtest/gtest.h>

#include <chrono>
#include <thread>

namespace wharf::internal {
namespace {

using std::chrono::milliseconds;
using std::chrono::steady_clock;

const Clock& clock() { return SystemClock::Get(); }
TimeNs In(milliseconds d) { return clock().NowNs() + d.count() * kNsPerMs; }
auto Never() {
  return [] { return false; };
}

TEST(DriverSeat, TryTake__OneDriverAtATime) {
  DriverSeat seat;
  EXPECT_TRUE(seat.TryTake(false));
  EXPECT_FALSE(seat.TryTake(false));
  EXPECT_TRUE(seat.taken());
  seat.Leave();
  EXPECT_FALSE(seat.taken());
  EXPECT_TRUE(seat.TryTake(false));
}

TEST(DriverSeat, Join__DrivesBesideTheDriverUntilBothLeave) {
  DriverSeat seat;
  ASSERT_TRUE(seat.TryTake(true));
  seat.Join();  // the keeper, while the driver runs a long handler
  seat.Leave();
  EXPECT_TRUE(seat.taken());
  EXPECT_FALSE(seat.TryTake(true));
  seat.Leave();
  EXPECT_FALSE(seat.taken());
}

TEST(DriverSeat, Wait__ReturnsAtOnceWhenTheSeatIsFree) {
  DriverSeat seat;
  const auto start = steady_clock::now();
  seat.Wait(seat.Observe(), Never(), In(milliseconds(5000)), false, clock());
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
}

TEST(DriverSeat, Wait__SleepsUntilACompletion) {
  DriverSeat seat;
  ASSERT_TRUE(seat.TryTake(false));  // another thread drives
  const auto start = steady_clock::now();
  std::thread waiter([&] { seat.Wait(seat.Observe(), Never(), In(milliseconds(10000)), false, clock()); });
  while (seat.wakeups() == 0 && steady_clock::now() - start < milliseconds(20)) {
    std::this_thread::yield();
  }
  EXPECT_EQ(seat.wakeups(), 0u) << "woke before anything happened";
  seat.NoteCompletion();
  waiter.join();
  EXPECT_LT(steady_clock::now() - start, milliseconds(5000));
  EXPECT_EQ(seat.wakeups(), 1u);
}

TEST(DriverSeat, Wait__ANoteBetweenObserveAndWaitIsNotLost) {
  DriverSeat seat;
  ASSERT_TRUE(seat.TryTake(false));
  const DriverSeat::Look look = seat.Observe();
  seat.NoteCompletion();  // after the look, before the wait
  const auto start = steady_clock::now();
  seat.Wait(look, Never(), In(milliseconds(10000)), false, clock());
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
}

TEST(DriverSeat, Wait__PendingCallsWakeOnlyWaitersThatRunHandlers) {
  DriverSeat seat;
  ASSERT_TRUE(seat.TryTake(false));  // a driver that runs no handlers (the keeper)
  DriverSeat::Look look = seat.Observe();
  seat.NoteCallsPending();
  auto start = steady_clock::now();
  seat.Wait(look, Never(), In(milliseconds(10000)), /*dispatches=*/true, clock());
  EXPECT_LT(steady_clock::now() - start, milliseconds(1000));
  // One that does not run handlers sleeps through them, to its deadline.
  look = seat.Observe();
  seat.NoteCallsPending();
  start = steady_clock::now();
  seat.Wait(look, Never(), In(milliseconds(150)), /*dispatches=*/false, clock());
  EXPECT_GE(steady_clock::now() - start, milliseconds(140));
}

TEST(DriverSeat, Wait__ADriverThatRunsHandlersKeepsWaitersAsleepForRequests) {
  DriverSeat seat;
  ASSERT_TRUE(seat.TryTake(true));
  const DriverSeat::Look look = seat.Observe();
  seat.NoteCallsPending();
  const auto start = steady_clock::now();
  seat.Wait(look, Never(), In(milliseconds(150)), /*dispatches=*/true, clock());
  EXPECT_GE(steady_clock::now() - start, milliseconds(140));
}

TEST(DriverSeat, Leave__WakesAWaiterToTakeOver) {
  DriverSeat seat;
  ASSERT_TRUE(seat.TryTake(false));
  bool took = false;
  std::thread waiter([&] {
    seat.Wait(seat.Observe(), Never(), In(milliseconds(10000)), false, clock());
    took = seat.TryTake(false);
  });
  std::this_thread::sleep_for(milliseconds(10));
  seat.Leave();
  waiter.join();
  EXPECT_TRUE(took);
}

TEST(DriverSeat, Wait__ItsOwnConditionEndsIt) {
  DriverSeat seat;
  ASSERT_TRUE(seat.TryTake(false));
  std::atomic<bool> mine{false};
  std::thread waiter([&] {
    seat.Wait(seat.Observe(), [&] { return mine.load(); }, In(milliseconds(10000)), false,
              clock());
  });
  mine = true;
  seat.WakeAll();
  waiter.join();
  SUCCEED();
}

}  // namespace
}  // namespace wharf::internal
