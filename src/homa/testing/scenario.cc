// Scenario driver: poll everyone until quiet, then jump to the next event.
#include "homa/testing/scenario.h"

#include <algorithm>
#include <cstdlib>

#include "wire/packet.h"

namespace wharf::homa::sim {

Scenario::Scenario(uint64_t seed) : clock_(0), net_(clock_, seed) {
  net_.SetDescriber([](std::span<const std::byte> bytes) { return wire::Describe(bytes); });
}

Host& Scenario::AddHost(const std::string& name, const HomaConfig& config) {
  auto host = std::make_unique<Host>();
  host->name = name;
  auto address = transport::NetAddress::Ipv4((198u << 24) | (18u << 16) | next_host_++, 4000);
  host->net = net_.Attach(name, address);
  auto homa = HomaTransport::Create(config, host->net.get(), clock_);
  if (!homa.ok()) std::abort();  // a test's own config is wrong
  host->homa = std::move(homa).value();
  Host& ref = *host;
  hosts_[name] = std::move(host);
  host_deadline_[name] = 0;
  return ref;
}

Buffer Scenario::Pattern(size_t size) {
  Buffer b = Buffer::Allocate(size);
  for (size_t i = 0; i < size; ++i) b.data()[i] = std::byte(static_cast<uint8_t>(i * 31 + 7));
  return b;
}

bool Scenario::MatchesPattern(const Buffer& b, size_t size) {
  if (b.size() != size) return false;
  for (size_t i = 0; i < size; ++i) {
    if (b.data()[i] != std::byte(static_cast<uint8_t>(i * 31 + 7))) return false;
  }
  return true;
}

uint64_t Scenario::Call(const std::string& from, const std::string& to, size_t size) {
  auto id = host(from).homa->SendRequest(host(to).address(), Pattern(size));
  if (!id.ok()) std::abort();
  return *id;
}

bool Scenario::Completed(const std::string& client, uint64_t id) {
  return host(client).completions.contains(id);
}

bool Scenario::PollAll() {
  bool any = false;
  for (auto& [name, host] : hosts_) {
    PollResult r = host->homa->Poll();
    host_deadline_[name] = r.next_deadline;
    any |= r.work > 0;
    HomaEvent event;
    while (host->homa->PopEvent(&event)) {
      any = true;
      if (event.kind == HomaEvent::Kind::kRequest && !event.status.ok()) {
        ++host->refused_requests;
        (void)host->homa->SendResponse(event.server_key, Buffer());
      } else if (event.kind == HomaEvent::Kind::kRequest) {
        ++host->handler_runs[{event.server_key.client.ToString(), event.client_id}];
        if (host->auto_echo) {
          (void)host->homa->SendResponse(event.server_key, std::move(event.message));
        } else {
          host->held_requests.push_back(std::move(event));
        }
      } else {
        host->completions[event.client_id] = std::move(event);
      }
    }
  }
  return any;
}

TimeNs Scenario::NextDeadline() const {
  TimeNs next = clock_.NextDeadline();
  for (const auto& [name, deadline] : host_deadline_) next = std::min(next, deadline);
  return next;
}

bool Scenario::RunUntil(const std::function<bool()>& done, DurationNs limit_ns) {
  TimeNs end = clock_.NowNs() + limit_ns;
  while (!done()) {
    // Poll until nothing more happens at this instant (bounded, in case a
    // deadline keeps saying "now" without progress).
    for (int i = 0; i < 1000 && PollAll(); ++i) {
    }
    if (done()) break;
    TimeNs next = std::max(NextDeadline(), clock_.NowNs() + 1);
    if (next > end) {
      clock_.AdvanceTo(end);
      PollAll();
      return done();
    }
    clock_.AdvanceTo(next);
  }
  return true;
}

void Scenario::RunFor(DurationNs duration_ns) {
  RunUntil([] { return false; }, duration_ns);
}

int Scenario::TotalHandlerRuns() const {
  int total = 0;
  for (const auto& [name, host] : hosts_) {
    for (const auto& [key, runs] : host->handler_runs) total += runs;
  }
  return total;
}

int Scenario::MaxRunsOfOneRpc() const {
  int most = 0;
  for (const auto& [name, host] : hosts_) {
    for (const auto& [key, runs] : host->handler_runs) most = std::max(most, runs);
  }
  return most;
}

}  // namespace wharf::homa::sim
