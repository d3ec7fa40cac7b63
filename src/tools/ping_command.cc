// `wharf ping`.
#include "tools/ping_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <deque>
#include <random>
#include <thread>

#include "base/clock.h"
#include "base/histogram.h"
#include "wharf/endpoint.h"

namespace wharf::tools {
namespace {

// Payload: an 8-byte request id (for the server's exactly-once count), then
// bytes derived from the id so that a mixed-up echo is caught.
Buffer MakePayload(uint64_t id, size_t size) {
  Buffer b = Buffer::Allocate(size);
  uint8_t* p = reinterpret_cast<uint8_t*>(b.data());
  for (size_t i = 0; i < size; ++i) p[i] = static_cast<uint8_t>((id * 131 + i * 7) >> 1);
  if (size >= 8) std::memcpy(p, &id, 8);
  return b;
}

bool SamePayload(const Buffer& got, uint64_t id, size_t size) {
  Buffer want = MakePayload(id, size);
  return got.size() == size && (size == 0 || std::memcmp(got.data(), want.data(), size) == 0);
}

struct InFlight {
  uint64_t id;
  TimeNs sent_ns;
  Completion done;
};

}  // namespace

void AddPingFlags(CLI::App& app, PingOptions& o) {
  app.add_option("target", o.target, "Server address: homa://HOST:PORT, tcp://HOST:PORT, or HOST:PORT (endpoint.default_transport)")->required();
  app.add_option("-c,--count", o.count, "RPCs to send")->capture_default_str()->check(CLI::PositiveNumber);
  app.add_option("-s,--size", o.size, "Request (and echo) size in bytes")->capture_default_str();
  app.add_option("-i,--interval", o.interval_s, "Seconds between sends (0: back to back)")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
  app.add_option("--concurrency", o.concurrency, "RPCs in flight at once")
      ->capture_default_str()
      ->check(CLI::Range(1, 100000));
  app.add_option("--timeout", o.timeout_s, "Seconds before one RPC counts as lost")
      ->capture_default_str()
      ->check(CLI::PositiveNumber);
  app.add_flag("-q,--quiet", o.quiet, "No progress line");
  app.add_flag("--messages", o.messages,
               "Exchange messages over a connection instead of RPCs (the server echoes each "
               "one back; one in flight)");
  app.add_flag("--server-stats", o.server_stats,
               "At the end, print how often the server executed requests (exactly-once check)");
  app.add_flag("--stats", o.stats, "At the end, print this client's transport counters");
  AddEndpointFlags(app, o.endpoint);
}

namespace {

// --messages: one connection, each message echoed by the server.
int PingMessages(Endpoint& ep, const PingOptions& o) {
  const Clock& clock = SystemClock::Get();
  auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(o.timeout_s));
  auto conn = ep.Connect(o.target, {.timeout = timeout});
  if (!conn.ok()) {
    std::fprintf(stderr, "wharf ping: %s\n", conn.status().ToString().c_str());
    return 1;
  }
  Histogram rtt;
  int ok = 0, failed = 0, corrupt = 0;
  std::string first_error;
  const TimeNs start = clock.NowNs();
  TimeNs next_progress = start + 250 * kNsPerMs;
  for (int i = 0; i < o.count; ++i) {
    const uint64_t id = static_cast<uint64_t>(i);
    const TimeNs sent = clock.NowNs();
    Status s = (*conn)->Send(MakePayload(id, o.size));
    Result<Buffer> echo = s.ok() ? (*conn)->Recv(timeout) : Result<Buffer>(s);
    if (!echo.ok()) {
      ++failed;
      if (first_error.empty()) first_error = echo.status().ToString();
      continue;
    }
    if (!SamePayload(*echo, id, o.size)) {
      ++corrupt;
      continue;
    }
    ++ok;
    rtt.Record(static_cast<uint64_t>(clock.NowNs() - sent));
    if (!o.quiet && clock.NowNs() >= next_progress) {
      next_progress += 250 * kNsPerMs;
      std::fprintf(stderr, "\r%d/%d done, p50 %.1f us   ", i + 1, o.count, rtt.P50() / 1e3);
    }
  }
  double secs = static_cast<double>(clock.NowNs() - start) / kNsPerSec;
  if (!o.quiet) std::fprintf(stderr, "\r%60s\r", "");
  std::printf("%s: %d messages of %zu B echoed, %d ok, %d failed, %d corrupt, %.0f msg/s\n",
              o.target.c_str(), o.count, o.size, ok, failed, corrupt, ok / secs);
  if (ok > 0) {
    std::printf("rtt us: min %.1f p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f\n",
                rtt.Min() / 1e3, rtt.P50() / 1e3, rtt.P90() / 1e3, rtt.P99() / 1e3,
                rtt.P999() / 1e3, rtt.Max() / 1e3);
  }
  if (!first_error.empty()) std::printf("first error: %s\n", first_error.c_str());
  return (failed == 0 && corrupt == 0) ? 0 : 1;
}

}  // namespace

int RunPing(const PingOptions& o) {
  // Our own endpoint speaks the target's transport (a target without a
  // scheme: the configured default) in the target's address family.
  size_t sep = o.target.find("://");
  std::string scheme = sep == std::string::npos ? "" : o.target.substr(0, sep + 3);
  std::string bind = scheme + (o.target.find('[') != std::string::npos ? "[::]:0" : "0.0.0.0:0");
  auto endpoint_options = MakeEndpointOptions(o.endpoint, bind);
  if (!endpoint_options.ok()) {
    std::fprintf(stderr, "wharf ping: %s\n", endpoint_options.status().ToString().c_str());
    return 2;
  }
  auto ep = Endpoint::Open(*endpoint_options);
  if (!ep.ok()) {
    std::fprintf(stderr, "wharf ping: %s\n", ep.status().ToString().c_str());
    return 1;
  }
  if (o.messages) return PingMessages(**ep, o);
  const Clock& clock = SystemClock::Get();
  Histogram rtt;
  std::mt19937_64 rng(static_cast<uint64_t>(clock.WallNs()));
  uint64_t id_base = rng() & ~uint64_t{0xFFFFFFFF};
  int sent = 0, ok = 0, lost = 0, corrupt = 0;
  std::string first_error;
  std::deque<InFlight> flight;
  TimeNs start = clock.NowNs();
  TimeNs next_send = start;
  TimeNs next_progress = start + 250 * kNsPerMs;
  auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(o.timeout_s));
  while (ok + lost + corrupt < o.count) {
    TimeNs now = clock.NowNs();
    while (sent < o.count && static_cast<int>(flight.size()) < o.concurrency && now >= next_send) {
      uint64_t id = id_base + static_cast<uint64_t>(sent);
      flight.push_back({id, clock.NowNs(),
                        (*ep)->ICall(o.target, kEchoMethod, MakePayload(id, o.size),
                                     {.deadline = timeout})});
      ++sent;
      next_send = o.interval_s > 0 ? next_send + static_cast<TimeNs>(o.interval_s * kNsPerSec) : now;
    }
    // Wait for the oldest; completions may arrive in any order.
    InFlight& head = flight.front();
    (void)head.done.Wait(std::chrono::milliseconds(1));  // outcome read below
    if (!head.done.done()) continue;
    for (auto it = flight.begin(); it != flight.end();) {
      if (!it->done.done()) {
        ++it;
        continue;
      }
      Status st = it->done.status();
      if (st.ok()) {
        if (SamePayload(it->done.TakeMessage(), it->id, o.size)) {
          ++ok;
          rtt.Record(static_cast<uint64_t>(clock.NowNs() - it->sent_ns));
        } else {
          ++corrupt;
        }
      } else {
        ++lost;
        if (first_error.empty()) first_error = st.ToString();
      }
      it = flight.erase(it);
    }
    if (!o.quiet && clock.NowNs() >= next_progress) {
      next_progress += 250 * kNsPerMs;
      std::fprintf(stderr, "\r%d/%d done, p50 %.1f us, lost %d   ", ok + lost + corrupt, o.count,
                   rtt.P50() / 1e3, lost);
    }
  }
  double secs = static_cast<double>(clock.NowNs() - start) / kNsPerSec;
  if (!o.quiet) std::fprintf(stderr, "\r%60s\r", "");
  std::printf("%s: %d RPCs of %zu B, %d ok, %d lost (%.2f%%), %d corrupt, %.0f RPC/s\n",
              o.target.c_str(), o.count, o.size, ok, lost, 100.0 * lost / o.count, corrupt,
              ok / secs);
  if (ok > 0) {
    std::printf("rtt us: min %.1f p50 %.1f p90 %.1f p99 %.1f p99.9 %.1f max %.1f\n",
                rtt.Min() / 1e3, rtt.P50() / 1e3, rtt.P90() / 1e3, rtt.P99() / 1e3,
                rtt.P999() / 1e3, rtt.Max() / 1e3);
  }
  if (!first_error.empty()) std::printf("first error: %s\n", first_error.c_str());
  if (o.server_stats) {
    auto r = (*ep)->Call(o.target, kServerStatsMethod, Buffer(), {.deadline = timeout});
    if (r.ok()) {
      std::printf("server: %.*s\n", static_cast<int>(r->size()),
                  reinterpret_cast<const char*>(r->data()));
    } else {
      std::printf("server stats: %s\n", r.status().ToString().c_str());
    }
  }
  if (o.stats) {
    for (const auto& [name, value] : (*ep)->Stats()) {
      std::printf("%s %llu\n", name.c_str(), static_cast<unsigned long long>(value));
    }
  }
  return (lost == 0 && corrupt == 0) ? 0 : 1;
}

}  // namespace wharf::tools
