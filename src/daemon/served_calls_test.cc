// daemon/served_calls_test.cc: served methods and the requests handed to
// the application, by handle.
#include "daemon/served_calls.h"

#include <gtest/gtest.h>

#include <vector>

#include "wharf/endpoint.h"

namespace wharf::daemon {
namespace {

engine::ServerCallRef Ref(uint64_t client_id) {
  engine::ServerCallRef ref;
  ref.key.client_id = client_id;
  return ref;
}

TEST(ServedCalls, Serve__StartsAndStops) {
  ServedCalls served;
  EXPECT_TRUE(served.Serve(7, true).ok());
  EXPECT_TRUE(served.serves(7));
  EXPECT_TRUE(served.Serve(7, true).ok());  // again: still one
  EXPECT_EQ(served.methods(), 1u);
  EXPECT_TRUE(served.Serve(7, false).ok());
  EXPECT_FALSE(served.serves(7));
  EXPECT_TRUE(served.Serve(8, false).ok());  // never served: nothing
}

TEST(ServedCalls, Serve__AReservedMethodIsRefused) {
  ServedCalls served;
  Status s = served.Serve(kFirstReservedMethod, true);
  EXPECT_EQ(s.code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(s.message(), "method " + std::to_string(kFirstReservedMethod) + " is reserved");
  EXPECT_EQ(served.methods(), 0u);
}

TEST(ServedCalls, Serve__ANewMethodPastTheCapIsRefused) {
  ServedCalls served;
  for (uint32_t m = 0; m < ServedCalls::kMaxMethods; ++m) ASSERT_TRUE(served.Serve(m, true).ok());
  Status s = served.Serve(ServedCalls::kMaxMethods, true);
  EXPECT_EQ(s.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(s.message(), "serves 1024 methods already (at most 1024)");
  EXPECT_TRUE(served.Serve(5, true).ok());  // one it serves already
  ASSERT_TRUE(served.Serve(5, false).ok());
  EXPECT_TRUE(served.Serve(ServedCalls::kMaxMethods, true).ok());
}

TEST(ServedCalls, Take__AnsweredOnceByItsHandle) {
  ServedCalls served;
  const uint64_t a = served.Add(Ref(10));
  const uint64_t b = served.Add(Ref(11));
  EXPECT_EQ(a, 1u);
  EXPECT_EQ(b, 2u);
  EXPECT_EQ(served.size(), 2u);
  EXPECT_TRUE(served.awaits(b));
  std::optional<engine::ServerCallRef> ref = served.Take(b);
  ASSERT_TRUE(ref.has_value());
  EXPECT_EQ(*ref, Ref(11));
  EXPECT_FALSE(served.Take(b).has_value());
  EXPECT_FALSE(served.awaits(b));
  EXPECT_TRUE(served.HandedOut(b));   // answered: a late answer, not garbage
  EXPECT_FALSE(served.HandedOut(3));  // never handed out
  EXPECT_FALSE(served.HandedOut(0));
  EXPECT_EQ(served.size(), 1u);
}

TEST(ServedCalls, Forget__AWithdrawnRequestGivesItsHandle) {
  ServedCalls served;
  served.Add(Ref(10));
  const uint64_t b = served.Add(Ref(11));
  uint64_t handle = 0;
  EXPECT_TRUE(served.Forget(Ref(11), &handle));
  EXPECT_EQ(handle, b);
  EXPECT_FALSE(served.Forget(Ref(11), &handle));
  EXPECT_FALSE(served.Take(b).has_value());
  EXPECT_EQ(served.size(), 1u);
}

TEST(ServedCalls, TakeAll__EveryRequestAwaitingAnAnswer) {
  ServedCalls served;
  served.Add(Ref(10));
  const uint64_t b = served.Add(Ref(11));
  ASSERT_TRUE(served.Take(b).has_value());
  served.Add(Ref(12));
  std::vector<engine::ServerCallRef> all = served.TakeAll();
  ASSERT_EQ(all.size(), 2u);
  EXPECT_TRUE((all[0] == Ref(10) && all[1] == Ref(12)) || (all[0] == Ref(12) && all[1] == Ref(10)));
  EXPECT_TRUE(served.empty());
  EXPECT_EQ(served.Add(Ref(13)), 4u);  // handles are never reused
}

}  // namespace
}  // namespace wharf::daemon
