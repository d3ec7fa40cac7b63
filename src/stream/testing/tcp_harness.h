// stream/testing/tcp_harness.h: drives TcpMessageTransports in one test
// process over loopback: polls every node until a condition holds or a
// bound (iterations and real time) runs out. Nodes may run on the system
// clock or on a SimClock that advances to the earliest transport deadline
// whenever the sockets are idle, so timeouts are exact and never slept for.
// Test-only; never linked into a production binary.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/clock.h"
#include "base/sim_clock.h"
#include "stream/tcp_transport.h"
#include "transport/message_transport.h"
#include "transport/net_address.h"

namespace wharf::stream::testing {

transport::NetAddress Loopback4(uint16_t port = 0);
transport::NetAddress Loopback6(uint16_t port = 0);
bool Ipv6LoopbackUsable();

// Deterministic bytes: byte i of pattern `seed` is (i * 131 + seed * 7) mod 251.
Buffer Pattern(size_t size, uint8_t seed);
bool MatchesPattern(const Buffer& buffer, size_t size, uint8_t seed);

// One transport plus what it reported. As a server it answers every request
// with `respond` (default: echo) unless auto_respond is false, in which case
// requests are kept in `held`.
struct Node {
  std::unique_ptr<TcpMessageTransport> t;
  bool auto_respond = true;
  std::function<Buffer(transport::MessageEvent&)> respond;
  // Server side: every kRequest event, counted per (client identity, id).
  std::map<std::pair<std::string, uint64_t>, int> handled;
  std::vector<transport::MessageEvent> held;      // kRequest events not answered
  std::vector<transport::MessageEvent> refused;   // kRequest events with a non-ok status
  std::vector<uint64_t> request_order;            // client ids of delivered requests, in order
  // Client side: kResponse / kFailed events by client id, and their order.
  std::map<uint64_t, transport::MessageEvent> done;
  std::vector<uint64_t> done_order;
  int duplicate_completions = 0;  // a second event for one client id (a bug)
  bool paused = false;            // see Harness::Pause

  transport::NetAddress address() const { return t->LocalAddress(); }
  bool Completed(uint64_t id) const { return done.count(id) != 0; }
  // Largest handled count over all requests (1 means exactly once).
  int MaxHandled() const;
};

class Harness {
 public:
  // Real time.
  Harness();
  // Virtual time: every node uses `clock`, which Run* advance when idle.
  explicit Harness(SimClock* clock);

  const Clock& clock() const { return *clock_; }

  // Opens a node on 127.0.0.1:0 (or config.bind if set); fails the test on
  // error. On real time, a default tcp.peer_timeout becomes 20 s.
  Node& AddNode(TcpConfig config = {});
  void RemoveNode(Node& node);  // destroys its transport
  // A paused node is not polled and its deadlines and fd are ignored, as if
  // its process were stopped (SIGSTOP): its kernel still takes bytes and
  // connections; it answers nothing until Resume.
  void Pause(Node& node);
  void Resume(Node& node);

  // Polls every node once and handles its events; returns work done.
  int PollOnce();
  // Polls until `done()` or the bounds run out; true if `done()` held.
  bool RunUntil(const std::function<bool()>& done, int max_iterations = 2'000'000,
                DurationNs max_real_ns = 60 * kNsPerSec);
  // Polls for a stretch of (virtual or real) time.
  void RunFor(DurationNs duration);

  // Time a SimClock harness advanced by itself.
  TimeNs sim_now() const { return clock_->NowNs(); }

 private:
  void HandleEvent(Node& node, transport::MessageEvent& event);
  // Waits (bounded, 1 ms) for any node's fd; with a SimClock and nothing
  // ready, jumps to the earliest deadline. Returns false if nothing can happen.
  bool WaitForProgress();

  const Clock* clock_;
  SimClock* sim_ = nullptr;
  int epoll_fd_ = -1;
  std::vector<std::unique_ptr<Node>> nodes_;
  TimeNs run_for_until_ = kNever;  // during RunFor on a SimClock: its end

 public:
  ~Harness();
};

}  // namespace wharf::stream::testing
