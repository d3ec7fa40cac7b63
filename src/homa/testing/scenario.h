// homa/testing/scenario.h: Scenario, a deterministic world for protocol tests:
// named hosts, each a HomaTransport (a HomaHost with its default endpoint) on
// a FakeNetwork endpoint, one SimClock, and a driver that polls every host
// and jumps time to the next thing that can happen (a packet arriving or a
// protocol deadline). Servers can echo requests automatically and count how
// often each request ran.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_network.h"

namespace wharf::homa::sim {

struct Host {
  std::string name;
  std::unique_ptr<transport::fake::FakeDatagram> net;
  std::unique_ptr<HomaTransport> homa;
  // Server behaviour: echo every request (default), or hold it for the test.
  bool auto_echo = true;
  std::vector<HomaEvent> held_requests;
  // Requests the transport refused unread (e.g. over max_message_bytes).
  int refused_requests = 0;
  // How many times each (client address, client id) reached the application.
  std::map<std::pair<std::string, uint64_t>, int> handler_runs;
  // Client side: completed (kResponse or kFailed) events by client id.
  std::map<uint64_t, HomaEvent> completions;
  transport::NetAddress address() const { return net->LocalAddress(); }
};

class Scenario {
 public:
  explicit Scenario(uint64_t seed = 1);

  // Adds host `name` at 198.18.0.<n>:4000 with `config`.
  Host& AddHost(const std::string& name, const HomaConfig& config = {});
  Host& host(const std::string& name) { return *hosts_.at(name); }

  SimClock& clock() { return clock_; }
  transport::fake::FakeNetwork& net() { return net_; }

  // Polls every host and advances time until `done()` holds or `limit_ns`
  // of simulated time passed. Returns done().
  bool RunUntil(const std::function<bool()>& done, DurationNs limit_ns);
  // Runs for exactly `duration_ns` of simulated time.
  void RunFor(DurationNs duration_ns);

  // Sends a request of `size` patterned bytes from `from` to `to`.
  uint64_t Call(const std::string& from, const std::string& to, size_t size);
  // True when `client` has a completion for `id`.
  bool Completed(const std::string& client, uint64_t id);
  // The patterned bytes Call() sends for `size` (the echo must match them).
  static Buffer Pattern(size_t size);
  static bool MatchesPattern(const Buffer& b, size_t size);
  // Total handler runs across servers, and the largest count for one RPC.
  int TotalHandlerRuns() const;
  int MaxRunsOfOneRpc() const;

 private:
  // Polls all hosts once; returns true if anything happened.
  bool PollAll();
  TimeNs NextDeadline() const;

  SimClock clock_;
  transport::fake::FakeNetwork net_;
  std::map<std::string, std::unique_ptr<Host>> hosts_;
  std::map<std::string, TimeNs> host_deadline_;
  int next_host_ = 1;
};

}  // namespace wharf::homa::sim
