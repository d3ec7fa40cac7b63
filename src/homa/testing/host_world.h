// homa/testing/host_world.h: hosts with several endpoints on one FakeNetwork
// and SimClock, each endpoint echoing or holding its requests, for the
// HomaHost tests (homa_host_test.cc, homa_host_receive_test.cc). Test-only.
#pragma once

#include <gtest/gtest.h>

#include <algorithm>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "base/sim_clock.h"
#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"
#include "homa/testing/scenario.h"
#include "transport/fake/fake_network.h"
#include "transport/fake/packet_predicate.h"
#include "wire/endpoint_id.h"
#include "wire/packet.h"

namespace wharf::homa::host_world {


using sim::Scenario;
using transport::fake::DescriptionStartsWithAnyOf;
using transport::fake::FakeDatagram;
using transport::fake::FakeNetwork;
using transport::fake::FlowDescriptionStartsWith;

inline constexpr DurationNs kSecond = kNsPerSec;
inline constexpr uint16_t kA = 1;
inline constexpr uint16_t kB = 2;

// What one endpoint saw, and how it serves.
struct Inbox {
  bool echo = true;                     // answer requests with their bytes
  std::vector<HomaEvent> held;          // requests kept when !echo
  std::map<uint64_t, HomaEvent> done;   // client side: completions by id
  int requests = 0;
};

// Hosts on one FakeNetwork, each a HomaHost with endpoints the test opens.
// Every endpoint's Poll() is called each round, so a host is polled once per
// endpoint: harmless by design.
class World {
 public:
  World() : clock_(0), net_(clock_, 1) {
    net_.SetDescriber([](std::span<const std::byte> bytes) { return wire::Describe(bytes); });
  }

  HomaHost& AddHost(const std::string& name, const HomaConfig& config = {}) {
    Node& node = nodes_[name];
    auto address = transport::NetAddress::Ipv4((198u << 24) | (18u << 16) | next_host_++, 4000);
    node.net = net_.Attach(name, address);
    auto host = HomaHost::Create(config, node.net.get(), clock_);
    EXPECT_TRUE(host.ok()) << host.status();
    node.host = std::move(host).value();
    return *node.host;
  }
  HomaEndpoint& Open(const std::string& name, uint16_t id) {
    Node& node = nodes_.at(name);
    auto ep = node.host->OpenEndpoint(id);
    EXPECT_TRUE(ep.ok()) << ep.status();
    HomaEndpoint& ref = **ep;
    node.endpoints[id] = std::move(ep).value();
    return ref;
  }
  HomaHost& host(const std::string& name) { return *nodes_.at(name).host; }
  HomaEndpoint& ep(const std::string& name, uint16_t id) {
    return *nodes_.at(name).endpoints.at(id);
  }
  Inbox& inbox(const std::string& name, uint16_t id) { return inboxes_[{name, id}]; }
  transport::NetAddress address(const std::string& name) {
    return nodes_.at(name).net->LocalAddress();
  }
  // Closes and destroys an endpoint.
  void Drop(const std::string& name, uint16_t id) { nodes_.at(name).endpoints.erase(id); }
  SimClock& clock() { return clock_; }
  FakeNetwork& net() { return net_; }
  // Completions and deliveries in the order they happened: "B req 1000",
  // "A done <id>".
  const std::vector<std::string>& order() const { return order_; }

  uint64_t Call(const std::string& from, uint16_t from_ep, const std::string& to, uint16_t to_ep,
                size_t size) {
    auto id = ep(from, from_ep).SendRequestTo(address(to), to_ep, Scenario::Pattern(size));
    EXPECT_TRUE(id.ok()) << id.status();
    return id.ok() ? *id : 0;
  }

  bool RunUntil(const std::function<bool()>& done, DurationNs limit_ns) {
    const TimeNs end = clock_.NowNs() + limit_ns;
    while (!done()) {
      for (int i = 0; i < 1000 && PollAll(); ++i) {
      }
      if (done()) break;
      TimeNs next = clock_.NextDeadline();
      for (auto& [name, node] : nodes_) {
        for (auto& [id, ep] : node.endpoints) next = std::min(next, ep->NextDeadline());
      }
      next = std::max(next, clock_.NowNs() + 1);
      if (next > end) {
        clock_.AdvanceTo(end);
        PollAll();
        return done();
      }
      clock_.AdvanceTo(next);
    }
    return true;
  }
  void RunFor(DurationNs duration_ns) {
    RunUntil([] { return false; }, duration_ns);
  }

 private:
  struct Node {
    std::unique_ptr<FakeDatagram> net;
    std::unique_ptr<HomaHost> host;
    std::map<uint16_t, std::unique_ptr<HomaEndpoint>> endpoints;
  };

  bool PollAll() {
    bool any = false;
    for (auto& [name, node] : nodes_) {
      for (auto& [id, ep] : node.endpoints) {
        any |= ep->Poll().work > 0;
        Inbox& box = inbox(name, id);
        const std::string who = name + "/" + std::to_string(id);
        HomaEvent event;
        while (ep->PopEvent(&event)) {
          any = true;
          if (event.kind == HomaEvent::Kind::kRequest) {
            ++box.requests;
            order_.push_back(who + " req " + std::to_string(event.message.size()));
            if (box.echo) {
              EXPECT_TRUE(ep->SendResponse(event.server_key, std::move(event.message)).ok());
            } else {
              box.held.push_back(std::move(event));
            }
          } else {
            order_.push_back(who + " done " + std::to_string(event.client_id));
            box.done[event.client_id] = std::move(event);
          }
        }
      }
    }
    return any;
  }

  SimClock clock_;
  FakeNetwork net_;
  std::map<std::string, Node> nodes_;
  std::map<std::pair<std::string, uint16_t>, Inbox> inboxes_;
  std::vector<std::string> order_;
  int next_host_ = 1;
};

inline size_t IndexOf(const std::vector<std::string>& lines, const std::string& line) {
  for (size_t i = 0; i < lines.size(); ++i) {
    if (lines[i] == line) return i;
  }
  return lines.size();
}

}  // namespace wharf::homa::host_world
