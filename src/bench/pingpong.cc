// The client loop shared by the UDP and TCP ping-pong baselines.
#include "bench/pingpong.h"

#include <algorithm>
#include <cstring>

#include "bench/cpu_usage.h"

namespace wharf::bench {

std::string_view WaitModeName(WaitMode mode) {
  return mode == WaitMode::kBusyPoll ? "poll" : "block";
}

Status ValidatePingPongOptions(const PingPongOptions& o, size_t max_size_bytes) {
  if (o.size_bytes < 1 || o.size_bytes > max_size_bytes) {
    return InvalidArgumentError("size " + std::to_string(o.size_bytes) + " B: must be 1 to " +
                                std::to_string(max_size_bytes) + " B");
  }
  if (o.iterations < 1) return InvalidArgumentError("iterations must be at least 1");
  if (o.time_limit_ns <= 0) return InvalidArgumentError("time limit must be positive");
  if (o.reply_timeout_ns <= 0) return InvalidArgumentError("reply timeout must be positive");
  return OkStatus();
}

TimeNs ServerDeadline(const PingPongOptions& o, const Clock& clock) {
  return clock.NowNs() + o.time_limit_ns + o.reply_timeout_ns + 10 * kNsPerSec;
}

void StampSequence(uint64_t seq, std::byte* payload, size_t size) {
  std::memcpy(payload, &seq, std::min(size, sizeof(seq)));
}

bool HasSequence(uint64_t seq, const std::byte* payload, size_t size) {
  return std::memcmp(payload, &seq, std::min(size, sizeof(seq))) == 0;
}

Result<PingPongResult> RunPingPongLoop(const PingPongOptions& options, const PinPlan& pinning,
                                       const Clock& clock, const ProgressFn& progress,
                                       std::string_view what, ChildProcess& server,
                                       PingPongClient& client,
                                       const std::vector<pid_t>& other_pids) {
  const std::string prefix = std::string(what) + ": ";
  PingPongResult result;
  result.pinning = pinning;
  WHARF_ASSIGN_OR_RETURN(ScopedCpuPin pin,
                         ScopedCpuPin::Pin(pinning.pin ? pinning.client_cpu : -1));

  std::vector<pid_t> cpu_pids = {0, server.pid()};
  cpu_pids.insert(cpu_pids.end(), other_pids.begin(), other_pids.end());
  CpuMeter cpu(cpu_pids);
  LatencyStats stats;
  stats.Reserve(options.iterations);
  const uint64_t total = options.warmup + options.iterations;
  const TimeNs start_ns = clock.NowNs();
  const TimeNs stop_ns = start_ns + options.time_limit_ns;
  TimeNs measure_start_ns = -1;
  TimeNs last_end_ns = start_ns;
  TimeNs next_progress_ns = start_ns + kProgressIntervalNs;
  uint64_t done = 0;
  uint64_t seq = 0;
  while (done < total) {
    TimeNs t0 = clock.NowNs();
    if (t0 >= stop_ns) {
      result.hit_time_limit = true;
      break;
    }
    if (done == options.warmup && measure_start_ns < 0) {
      cpu.Start();  // a few system calls, kept out of the first timed round trip
      t0 = clock.NowNs();
      measure_start_ns = t0;
    }
    auto outcome = client.RoundTrip(++seq, t0 + options.reply_timeout_ns);
    const TimeNs t1 = clock.NowNs();
    if (!outcome.ok()) {
      std::string context = prefix + "round trip " + std::to_string(done + 1);
      if (auto exit = server.TryReap()) context += " (echo server " + exit->ToString() + ")";
      return outcome.status().WithContext(context);
    }
    if (*outcome == PingPongClient::Outcome::kTimedOut) {
      if (auto exit = server.TryReap()) {
        return UnavailableError(
            prefix + "echo server ended early (" + exit->ToString() + ")" +
            (!exit->signaled && exit->code == kChildPinFailedExitCode
                 ? ": could not pin it to CPU " + std::to_string(pinning.server_cpu)
                 : ""));
      }
      if (++result.timeouts > options.max_timeouts) {
        return DeadlineExceededError(prefix + std::to_string(result.timeouts) +
                                     " round trips got no reply within " +
                                     std::to_string(options.reply_timeout_ns / kNsPerMs) + " ms");
      }
      continue;
    }
    if (done >= options.warmup) stats.Record(t1 - t0);
    ++done;
    last_end_ns = t1;
    if (progress && t1 >= next_progress_ns) {
      progress(PingPongProgress{done, total, t1 - start_ns});
      next_progress_ns = t1 + kProgressIntervalNs;
    }
  }

  result.cpu_ns = cpu.Stop();  // before the server is told to go
  result.cpu_processes = static_cast<int>(cpu_pids.size());
  client.Finish();
  auto exit = server.Wait(2 * kNsPerSec);
  result.server_exit = exit.ok() ? exit->ToString() : server.KillAndReap().ToString() + " (killed)";
  result.warmup_done = std::min(done, options.warmup);
  if (stats.count() == 0) {
    return DeadlineExceededError(
        prefix + "time limit of " + std::to_string(options.time_limit_ns / kNsPerMs) +
        " ms reached after " + std::to_string(done) + " warm-up round trips; nothing measured");
  }
  result.latency = stats.Summarize(last_end_ns - measure_start_ns);
  return result;
}

}  // namespace wharf::bench
