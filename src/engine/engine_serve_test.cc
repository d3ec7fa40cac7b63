// Component tests of the engine's serving side through its sink: answers
// that come later, cancel notices, the client's deadline, and the caps on
// what peers may make an engine hold (connections, barrier rounds).
#include <gtest/gtest.h>

#include <string>

#include "engine/engine.h"
#include "engine/testing/engine_fixture.h"

namespace wharf::engine {
namespace {

using testing::EngineTest;
using testing::Node;
using StatePtr = testing::OpPtr;

constexpr DurationNs kSecond = kNsPerSec;

uint64_t Counter(const Engine& engine, const std::string& name) {
  for (const auto& [key, value] : engine.Counters()) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

TEST_F(EngineTest, DeferredAnswerArrivesLongAfterTheRequest) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetDeferred(1);
  StatePtr call = a.engine->Call(b.uri, 1, Text("q"), clock_.NowNs() + 30 * kSecond);
  ASSERT_TRUE(RunUntil([&] { return !b.engine->deferred().empty(); }));
  IncomingCall held = std::move(b.engine->deferred().front());
  b.engine->deferred().pop_front();
  EXPECT_EQ(held.method, 1u);
  EXPECT_EQ(held.request.AsStringView(), "q");
  // The server's copy of the deadline: 30 s from when the request left.
  EXPECT_GT(held.deadline_ns, clock_.NowNs() + 29 * kSecond);
  EXPECT_LE(held.deadline_ns, clock_.NowNs() + 30 * kSecond);
  // Both engines keep polling while the answer is held: the client's probes
  // are answered, so ten seconds of waiting is not a dead server.
  RunFor(10 * kSecond);
  ASSERT_FALSE(Done(call)) << call->status;
  b.engine->Respond(held.ref, OkStatus(), Text("answer"));
  ASSERT_TRUE(RunUntilDone(call));
  ASSERT_TRUE(call->status.ok()) << call->status;
  EXPECT_EQ(call->message.AsStringView(), "answer");
}

TEST_F(EngineTest, TheHostsClockReadGivesTheTimeLeftUntilCleared) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetDeferred(1);
  // The host read the clock 2 s ago (as wharfd reads it once per run of an
  // application's commands): the server hears 32 s left, not 30.
  const TimeNs deadline = clock_.NowNs() + 30 * kSecond;
  a.engine->engine().SetHostNow(clock_.NowNs() - 2 * kSecond);
  StatePtr first = a.engine->Call(b.uri, 1, Text("host's read"), deadline);
  a.engine->engine().ClearHostNow();
  StatePtr second = a.engine->Call(b.uri, 1, Text("own read"), deadline);
  ASSERT_TRUE(RunUntil([&] { return b.engine->deferred().size() == 2; }));
  for (const IncomingCall& held : b.engine->deferred()) {
    const DurationNs left = held.deadline_ns - clock_.NowNs();
    if (held.request.AsStringView() == "host's read") {
      EXPECT_GT(left, 31 * kSecond);
      EXPECT_LE(left, 32 * kSecond);
    } else {
      EXPECT_GT(left, 29 * kSecond);
      EXPECT_LE(left, 30 * kSecond);
    }
  }
  for (IncomingCall& held : b.engine->deferred()) b.engine->Respond(held.ref, OkStatus());
  b.engine->deferred().clear();
  ASSERT_TRUE(RunUntil([&] { return Done(first) && Done(second); }));
}

TEST_F(EngineTest, DeferredErrorReachesTheClient) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetDeferred(1);
  StatePtr call = a.engine->Call(b.uri, 1, Text("q"), kNever);
  ASSERT_TRUE(RunUntil([&] { return !b.engine->deferred().empty(); }));
  EXPECT_EQ(b.engine->deferred().front().deadline_ns, kNever);
  b.engine->Respond(b.engine->deferred().front().ref, PermissionDeniedError("not you"));
  ASSERT_TRUE(RunUntilDone(call));
  EXPECT_EQ(call->status.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(call->status.message(), "not you");
}

TEST_F(EngineTest, CancelTellsTheServerWhichCall) {
  Node& a = AddNode("A");
  Node& b = AddNode("B");
  b.engine->SetDeferred(1);
  StatePtr first = a.engine->Call(b.uri, 1, Text("1"), kNever);
  StatePtr second = a.engine->Call(b.uri, 1, Text("2"), kNever);
  ASSERT_TRUE(RunUntil([&] { return b.engine->deferred().size() == 2; }));
  ServerCallRef second_ref = b.engine->deferred()[0].request.AsStringView() == "2"
                                 ? b.engine->deferred()[0].ref
                                 : b.engine->deferred()[1].ref;
  a.engine->Cancel(second->op_id);
  EXPECT_EQ(second->status.code(), StatusCode::kCancelled);
  ASSERT_TRUE(RunUntil([&] { return !b.engine->cancelled().empty(); }));
  ASSERT_EQ(b.engine->cancelled().size(), 1u);
  EXPECT_EQ(b.engine->cancelled()[0], second_ref);
  EXPECT_EQ(Counter(a.engine->engine(), "engine.cancel_notices_sent"), 1u);
  EXPECT_EQ(Counter(b.engine->engine(), "engine.cancel_notices_received"), 1u);
  // Answering the withdrawn call is harmless; the other one still works.
  b.engine->Respond(second_ref, OkStatus(), Text("late"));
  for (const IncomingCall& c : b.engine->deferred()) {
    if (!(c.ref == second_ref)) b.engine->Respond(c.ref, OkStatus(), Text("first"));
  }
  ASSERT_TRUE(RunUntilDone(first));
  EXPECT_EQ(first->message.AsStringView(), "first");
  EXPECT_EQ(second->status.code(), StatusCode::kCancelled);
}

TEST_F(EngineTest, ConnectionsPeersOpenAreCapped) {
  EngineLimits limits;
  limits.max_connections = 2;
  Node& a = AddNode("A");
  Node& b = AddNode("B", limits);
  b.engine->Listen();
  std::vector<StatePtr> connects;
  for (int i = 0; i < 3; ++i) connects.push_back(a.engine->Connect(b.uri, false, kNever));
  ASSERT_TRUE(RunUntil([&] {
    return std::all_of(connects.begin(), connects.end(), [](const StatePtr& c) { return Done(c); });
  }));
  int refused = 0;
  for (const StatePtr& c : connects) {
    if (c->status.code() == StatusCode::kResourceExhausted) {
      ++refused;
      EXPECT_NE(c->status.message().find("endpoint.max_connections"), std::string::npos);
    } else {
      EXPECT_TRUE(c->status.ok()) << c->status;
    }
  }
  EXPECT_EQ(refused, 1);
  EXPECT_EQ(Counter(b.engine->engine(), "engine.connections_refused"), 1u);
  // Releasing an accepted connection makes room again.
  StatePtr accepted = b.engine->Accept(kNever);
  ASSERT_TRUE(Done(accepted));
  b.engine->Release(accepted->value);
  StatePtr again = a.engine->Connect(b.uri, false, kNever);
  ASSERT_TRUE(RunUntilDone(again));
  EXPECT_TRUE(again->status.ok()) << again->status;
}

TEST_F(EngineTest, BarrierRoundsPeersOpenAreCappedAndExpire) {
  EngineLimits limits;
  limits.max_barrier_rounds = 2;
  limits.barrier_round_timeout_ns = 2 * kSecond;
  Node& coordinator = AddNode("C", limits);
  Node& member = AddNode("M");
  // Rounds whose coordinator never arrives: two are held, the third refused.
  std::vector<StatePtr> arrivals;
  for (uint64_t round = 0; round < 3; ++round) {
    arrivals.push_back(member.engine->BarrierArrive(coordinator.uri, false, 7, round, 2, kNever));
  }
  RunFor(100 * kNsPerMs);
  ASSERT_TRUE(Done(arrivals[2]));
  EXPECT_EQ(arrivals[2]->status.code(), StatusCode::kResourceExhausted) << arrivals[2]->status;
  EXPECT_FALSE(Done(arrivals[0]));
  EXPECT_EQ(Counter(coordinator.engine->engine(), "engine.barrier_rounds"), 2u);
  EXPECT_EQ(Counter(coordinator.engine->engine(), "engine.barrier_rounds_refused"), 1u);
  // After the round timeout the held ones are answered and forgotten.
  ASSERT_TRUE(RunUntil([&] { return Done(arrivals[0]) && Done(arrivals[1]); }, 5 * kSecond));
  EXPECT_EQ(arrivals[0]->status.code(), StatusCode::kDeadlineExceeded) << arrivals[0]->status;
  EXPECT_EQ(Counter(coordinator.engine->engine(), "engine.barrier_rounds"), 0u);
  EXPECT_EQ(Counter(coordinator.engine->engine(), "engine.barrier_rounds_expired"), 2u);
  // A round the coordinator joins is released as before.
  StatePtr remote = member.engine->BarrierArrive(coordinator.uri, false, 7, 10, 2, kNever);
  StatePtr local = coordinator.engine->BarrierArrive(coordinator.uri, true, 7, 10, 2, kNever);
  ASSERT_TRUE(RunUntil([&] { return Done(remote) && Done(local); }));
  EXPECT_TRUE(remote->status.ok()) << remote->status;
  EXPECT_TRUE(local->status.ok()) << local->status;
}

TEST_F(EngineTest, BarrierRoundRefusesMoreArrivalsThanMembers) {
  Node& coordinator = AddNode("C");
  Node& m1 = AddNode("M1");
  Node& m2 = AddNode("M2");
  // Two members claim a round of 2 (the coordinator counts as one).
  StatePtr one = m1.engine->BarrierArrive(coordinator.uri, false, 9, 0, 2, kNever);
  RunFor(10 * kNsPerMs);
  StatePtr two = m2.engine->BarrierArrive(coordinator.uri, false, 9, 0, 2, kNever);
  RunFor(10 * kNsPerMs);
  StatePtr three = m2.engine->BarrierArrive(coordinator.uri, false, 9, 0, 2, kNever);
  ASSERT_TRUE(RunUntilDone(three));
  EXPECT_EQ(three->status.code(), StatusCode::kInvalidArgument) << three->status;
  StatePtr local = coordinator.engine->BarrierArrive(coordinator.uri, true, 9, 0, 2, kNever);
  ASSERT_TRUE(RunUntil([&] { return Done(local) && Done(one); }));
  EXPECT_TRUE(local->status.ok());
}

}  // namespace
}  // namespace wharf::engine
