// `wharf ping`.
#include "tools/ping_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <cstring>
#include <algorithm>
#include <random>
#include <vector>

#include "base/clock.h"
#include "base/histogram.h"
#include "tools/progress_line.h"
#include "wharf/endpoint.h"

namespace wharf::tools {
namespace {

// Payload: an 8-byte request id (for the server's exactly-once count), then
// 8-byte words derived from the id, so that a mixed-up echo is caught.
// Written in place into a buffer of the endpoint's (AllocateBuffer: in
// managed mode the shared heap, sent without a copy) and checked in place, a
// word at a time: no allocation per RPC beyond the one the harness's client
// makes, and a few nanoseconds for 64 bytes.
uint64_t PayloadWord(uint64_t id, size_t k) {
  return (id ^ (k * 0x9E3779B97F4A7C15ull)) * 0xBF58476D1CE4E5B9ull;
}

Buffer MakePayload(Endpoint& ep, uint64_t id, size_t size) {
  Buffer b = ep.AllocateBuffer(size);
  std::byte* p = b.data();
  for (size_t at = 0, k = 0; at < size; at += 8, ++k) {
    const uint64_t word = k == 0 ? id : PayloadWord(id, k);
    std::memcpy(p + at, &word, std::min<size_t>(8, size - at));
  }
  return b;
}

bool SamePayload(const Buffer& got, uint64_t id, size_t size) {
  if (got.size() != size) return false;
  const std::byte* p = got.data();
  for (size_t at = 0, k = 0; at < size; at += 8, ++k) {
    const uint64_t word = k == 0 ? id : PayloadWord(id, k);
    if (std::memcmp(p + at, &word, std::min<size_t>(8, size - at)) != 0) return false;
  }
  return true;
}

// One RPC of the closed loop: the slot is free while `done` is invalid.
struct Slot {
  uint64_t id = 0;
  TimeNs sent_ns = 0;
  Completion done;
};

}  // namespace

void AddPingFlags(CLI::App& app, PingOptions& o) {
  app.add_option("target", o.target, "Server address: homa://HOST:PORT, tcp://HOST:PORT, ucx://HOST:PORT, or HOST:PORT (endpoint.default_transport)")->required();
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
  ProgressLine progress(!o.quiet);
  const TimeNs start = clock.NowNs();
  TimeNs next_progress = start + 250 * kNsPerMs;
  for (int i = 0; i < o.count; ++i) {
    const uint64_t id = static_cast<uint64_t>(i);
    const TimeNs sent = clock.NowNs();
    Status s = (*conn)->Send(MakePayload(ep, id, o.size));
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
    const TimeNs now = clock.NowNs();
    if (now >= next_progress) {
      next_progress = now + 250 * kNsPerMs;
      char text[96];
      std::snprintf(text, sizeof text, "%d/%d done, p50 %.1f us", i + 1, o.count, rtt.P50() / 1e3);
      progress.Show(text, now - start);
    }
  }
  double secs = static_cast<double>(clock.NowNs() - start) / kNsPerSec;
  progress.Clear();
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
  // The closed loop the benchmark harness runs (bench/cluster_transports.cc
  // WharfLoadTransport): a slot per RPC in flight, the new ones issued in
  // one batch, one WaitForAny for whichever completes, the done ones reaped
  // by a look at every slot.
  std::vector<Slot> slots(static_cast<size_t>(o.concurrency));
  std::vector<size_t> free_slots;
  for (size_t i = slots.size(); i-- > 0;) free_slots.push_back(i);
  ProgressLine progress(!o.quiet);
  Endpoint& endpoint = **ep;
  const TimeNs start = clock.NowNs();
  TimeNs next_send = start;
  TimeNs next_progress = start + 250 * kNsPerMs;
  const auto timeout = std::chrono::duration_cast<std::chrono::nanoseconds>(
      std::chrono::duration<double>(o.timeout_s));
  const auto interval_ns = static_cast<DurationNs>(o.interval_s * kNsPerSec);
  while (ok + lost + corrupt < o.count) {
    TimeNs now = clock.NowNs();
    if (sent < o.count && !free_slots.empty() && now >= next_send) {
      SendBatch batch(endpoint);
      while (sent < o.count && !free_slots.empty() && now >= next_send) {
        Slot& slot = slots[free_slots.back()];
        free_slots.pop_back();
        slot.id = id_base + static_cast<uint64_t>(sent);
        slot.sent_ns = now;
        slot.done = endpoint.ICall(o.target, kEchoMethod, MakePayload(endpoint, slot.id, o.size),
                                   {.deadline = timeout});
        ++sent;
        next_send = interval_ns > 0 ? next_send + interval_ns : now;
      }
    }
    // What completed meanwhile; if nothing did, wait until one does (or,
    // with --interval, the next send is due), as the harness's loop does.
    auto reap = [&](TimeNs at) {
      int reaped = 0;
      for (size_t i = 0; i < slots.size(); ++i) {
        Slot& slot = slots[i];
        if (!slot.done.valid() || !slot.done.done()) continue;
        const Status st = slot.done.status();
        if (!st.ok()) {
          ++lost;
          if (first_error.empty()) first_error = st.ToString();
        } else if (SamePayload(slot.done.TakeMessage(), slot.id, o.size)) {
          ++ok;
          rtt.Record(static_cast<uint64_t>(at - slot.sent_ns));
        } else {
          ++corrupt;
        }
        slot.done = Completion();
        free_slots.push_back(i);
        ++reaped;
      }
      return reaped;
    };
    if (reap(clock.NowNs()) == 0) {
      const DurationNs wait_ns =
          (interval_ns > 0 && sent < o.count && !free_slots.empty())
              ? std::max<DurationNs>(next_send - clock.NowNs(), 0)
              : 100 * kNsPerMs;
      if (wait_ns > 0) (void)endpoint.WaitForAny(std::chrono::nanoseconds(wait_ns));
      (void)reap(clock.NowNs());
    }
    now = clock.NowNs();
    if (now >= next_progress) {
      next_progress = now + 250 * kNsPerMs;
      char text[96];
      std::snprintf(text, sizeof text, "%d/%d done, p50 %.1f us, lost %d", ok + lost + corrupt,
                    o.count, rtt.P50() / 1e3, lost);
      progress.Show(text, now - start);
    }
  }
  const double secs = static_cast<double>(clock.NowNs() - start) / kNsPerSec;
  progress.Clear();
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
