// Send batching through the public API in embedded mode, over real loopback
// homa: wharf::SendBatch around many ICalls (they leave in one batched
// flush and all complete with the right data), a SendBatch left open while
// the same thread waits (the wait's poll sends what it holds), and
// completion callbacks that issue the next call (RunCallbacks batches them).
// A server thread answers; the client is driven only by the test thread.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <deque>
#include <functional>
#include <string>
#include <vector>

#include "client/testing/server_thread.h"
#include "wharf/endpoint.h"

namespace wharf {
namespace {

using namespace std::chrono_literals;
using testing::ServerThread;

constexpr uint32_t kEcho = 1;

std::unique_ptr<Endpoint> OpenLoopback() {
  auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0"});
  if (!ep.ok()) ADD_FAILURE() << ep.status();
  return ep.ok() ? std::move(ep).value() : nullptr;
}

uint64_t Stat(const Endpoint& ep, const std::string& name) {
  for (const auto& [key, value] : ep.Stats()) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

class EndpointBatchTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = OpenLoopback();
    client_ = OpenLoopback();
    ASSERT_TRUE(server_ && client_);
    ASSERT_TRUE(server_
                    ->Serve(kEcho, [](const RpcContext&, Buffer b) -> Result<Buffer> {
                      return Buffer::Copy("re:" + std::string(b.AsStringView()));
                    })
                    .ok());
    thread_ = std::make_unique<ServerThread>(*server_);
  }
  void TearDown() override {
    thread_.reset();
    client_.reset();
    server_.reset();
  }

  std::unique_ptr<Endpoint> server_;
  std::unique_ptr<Endpoint> client_;
  std::unique_ptr<ServerThread> thread_;
};

TEST_F(EndpointBatchTest, SendBatchAroundManyICallsCompletesThemAllWithTheirData) {
  constexpr int kCalls = 12;  // under a held batch's head (16 datagrams), which leaves early
  const uint64_t flushes = Stat(*client_, "homa.batched_flushes");
  std::vector<Completion> calls;
  {
    SendBatch batch(*client_);
    for (int i = 0; i < kCalls; ++i) {
      calls.push_back(client_->ICall(server_->address(), kEcho, Buffer::Copy("m" + std::to_string(i))));
    }
    // Nothing drives the client meanwhile: all of them wait in the batch.
    EXPECT_EQ(Stat(*client_, "homa.packets_sent"), 0u);
  }
  EXPECT_EQ(Stat(*client_, "homa.batched_flushes"), flushes + 1);
  EXPECT_EQ(Stat(*client_, "homa.packets_sent"), static_cast<uint64_t>(kCalls));
  for (int i = 0; i < kCalls; ++i) {
    ASSERT_TRUE(calls[i].Wait(10s).ok()) << i << ": " << calls[i].status();
    EXPECT_EQ(calls[i].TakeMessage().AsStringView(), "re:m" + std::to_string(i));
  }
}

TEST_F(EndpointBatchTest, WaitingInsideAnOpenSendBatchSendsWhatItHolds) {
  SendBatch batch(*client_);
  Completion first = client_->ICall(server_->address(), kEcho, Buffer::Copy("one"));
  Completion second = client_->ICall(server_->address(), kEcho, Buffer::Copy("two"));
  EXPECT_EQ(Stat(*client_, "homa.packets_sent"), 0u);
  // The batch stays open; the wait's polls send its requests.
  ASSERT_TRUE(second.Wait(10s).ok()) << second.status();
  ASSERT_TRUE(first.Wait(10s).ok()) << first.status();
  EXPECT_EQ(first.TakeMessage().AsStringView(), "re:one");
  EXPECT_EQ(second.TakeMessage().AsStringView(), "re:two");
  // And a call made later in the same open batch completes too.
  Completion third = client_->ICall(server_->address(), kEcho, Buffer::Copy("three"));
  ASSERT_TRUE(third.Wait(10s).ok()) << third.status();
  EXPECT_EQ(third.TakeMessage().AsStringView(), "re:three");
}

TEST_F(EndpointBatchTest, CompletionCallbacksThatIssueTheNextCallRunAHundredCalls) {
  // Four chains, each a callback-driven loop: a completion's callback checks
  // the answer and issues the chain's next call. Callbacks completing in one
  // poll pass run in one batch, so their calls leave together.
  constexpr int kChains = 4;
  constexpr int kPerChain = 25;
  std::deque<Completion> calls;  // stable addresses; only this thread touches it
  std::atomic<int> answered{0};
  std::atomic<int> errors{0};
  std::function<void(int, int)> issue = [&](int chain, int n) {
    const std::string text = std::to_string(chain) + "/" + std::to_string(n);
    calls.push_back(client_->ICall(server_->address(), kEcho, Buffer::Copy(text)));
    Completion* call = &calls.back();
    call->OnComplete([&, chain, n, text, call](const Status& s) {
      if (!s.ok() || call->TakeMessage().AsStringView() != "re:" + text) {
        ++errors;
        return;
      }
      ++answered;
      if (n + 1 < kPerChain) issue(chain, n + 1);
    });
  };
  for (int chain = 0; chain < kChains; ++chain) issue(chain, 0);
  const auto end = std::chrono::steady_clock::now() + 20s;
  while (answered.load() + errors.load() < kChains * kPerChain &&
         std::chrono::steady_clock::now() < end) {
    client_->WaitForAny(100ms);
  }
  EXPECT_EQ(errors.load(), 0);
  EXPECT_EQ(answered.load(), kChains * kPerChain);
  EXPECT_GE(Stat(*client_, "homa.batched_flushes"), 1u);
}

}  // namespace
}  // namespace wharf
