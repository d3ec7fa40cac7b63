// engine/testing/engine_fixture.h: EngineTest, the fixture of the engine's
// component tests: engines (each behind a TestHost) on HomaTransports over
// one FakeNetwork + SimClock, and a driver that polls every node until quiet,
// then jumps the clock to the next deadline.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "engine/testing/test_host.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_network.h"

namespace wharf::engine::testing {

using transport::NetAddress;
using transport::fake::FakeNetwork;
using StatePtr = OpPtr;

constexpr DurationNs kSecond = kNsPerSec;

struct Node {
  std::string name;
  NetAddress addr;
  Uri uri;  // homa://addr, as the application names it
  std::unique_ptr<transport::fake::FakeDatagram> datagram;
  std::unique_ptr<homa::HomaTransport> homa;
  std::unique_ptr<TestHost> engine;    // null for a bare transport
  std::vector<homa::HomaEvent> events;  // a bare transport's events
};

class EngineTest : public ::testing::Test {
 protected:
  // Declared before nodes_: destroyed after them.
  SimClock clock_{0};
  FakeNetwork net_{clock_, /*seed=*/1};
  std::vector<std::unique_ptr<Node>> nodes_;

  Node& AddNode(const std::string& name, EngineLimits limits = EngineLimits{},
                bool with_engine = true) {
    auto node = std::make_unique<Node>();
    node->name = name;
    node->addr = NetAddress::Ipv4(0xC6120001 + static_cast<uint32_t>(nodes_.size()), 4000);
    node->uri = Uri{"homa", node->addr};
    node->datagram = net_.Attach(name, node->addr);
    auto homa = homa::HomaTransport::Create(homa::HomaConfig{}, node->datagram.get(), clock_);
    EXPECT_TRUE(homa.ok()) << homa.status().ToString();
    node->homa = std::move(homa).value();
    if (with_engine) {
      node->engine = std::make_unique<TestHost>(node->homa.get(), nullptr, clock_, limits);
    }
    nodes_.push_back(std::move(node));
    return *nodes_.back();
  }

  // One pass over every node; true if anything happened.
  bool PollAll() {
    bool any = false;
    for (auto& node : nodes_) {
      if (node->engine) {
        any |= node->engine->Poll().work > 0;
      } else {
        any |= node->homa->Poll().work > 0;
        homa::HomaEvent event;
        while (node->homa->PopEvent(&event)) {
          any = true;
          node->events.push_back(std::move(event));
        }
      }
    }
    return any;
  }

  TimeNs NextDeadline() const {
    TimeNs next = clock_.NextDeadline();
    for (const auto& node : nodes_) {
      next = std::min(next, node->engine ? node->engine->NextDeadline() : node->homa->NextDeadline());
    }
    return next;
  }

  // Runs until `done` or `limit_ns` of simulated time pass; returns done().
  bool RunUntil(const std::function<bool()>& done, DurationNs limit_ns = kSecond) {
    TimeNs end = clock_.NowNs() + limit_ns;
    while (true) {
      for (int i = 0; i < 1000 && PollAll(); ++i) {
      }
      if (done()) return true;
      TimeNs next = std::max(NextDeadline(), clock_.NowNs() + 1);
      if (next > end) {
        clock_.AdvanceTo(end);
        PollAll();
        return done();
      }
      clock_.AdvanceTo(next);
    }
  }
  void RunFor(DurationNs d) { RunUntil([] { return false; }, d); }

  static bool Done(const StatePtr& s) { return s->done.load(); }
  bool RunUntilDone(const StatePtr& s, DurationNs limit_ns = kSecond) {
    return RunUntil([&] { return Done(s); }, limit_ns);
  }

  // Connects a -> b (b listens) and returns {a's conn id, b's conn id}.
  std::pair<uint64_t, uint64_t> ConnectPair(Node& a, Node& b, bool ordered = false) {
    b.engine->Listen();
    StatePtr accept = b.engine->Accept(kNever);
    StatePtr connect = a.engine->Connect(b.uri, ordered, kNever);
    EXPECT_TRUE(RunUntil([&] { return Done(accept) && Done(connect); }));
    EXPECT_TRUE(connect->status.ok()) << connect->status.ToString();
    EXPECT_TRUE(accept->status.ok()) << accept->status.ToString();
    return {connect->value, accept->value};
  }

  static Buffer Text(std::string_view s) { return Buffer::Copy(s); }
};


}  // namespace wharf::engine::testing
