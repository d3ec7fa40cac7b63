// ucx_perftest runner: argv-built child processes under /usr/bin/env,
// readiness from the server's listening port, the "Final:" line parsed.
#include "bench/ucx_perftest_runner.h"

#include <signal.h>

#include <sstream>
#include <string>
#include <vector>

#include "bench/child_process.h"
#include "bench/sockets.h"

namespace wharf::bench {
namespace {

constexpr DurationNs kStartupPollNs = 5 * kNsPerMs;
constexpr DurationNs kStartupTimeoutNs = 5 * kNsPerSec;

}  // namespace

Result<UcxPerftestResult> ParseUcxPerftestOutput(std::string_view text) {
  // "Final:  20000  4.096  31.110  39.388  1.96  1.55  32144  25388"
  const size_t at = text.rfind("Final:");
  if (at == std::string_view::npos) {
    return InvalidArgumentError("ucx_perftest printed no Final: line: " +
                                QuoteOutput(std::string(text)));
  }
  size_t end = text.find('\n', at);
  std::istringstream line(std::string(
      text.substr(at + 6, end == std::string_view::npos ? std::string_view::npos : end - at - 6)));
  UcxPerftestResult r;
  if (!(line >> r.iterations >> r.p50_latency_us >> r.average_latency_us >> r.overall_latency_us >>
        r.average_bandwidth_mbs >> r.overall_bandwidth_mbs >> r.average_message_rate >>
        r.overall_message_rate)) {
    return InvalidArgumentError("ucx_perftest's Final: line has not the 8 numbers expected: " +
                                QuoteOutput(std::string(text.substr(at))));
  }
  return r;
}

Result<UcxPerftestResult> RunUcxPerftest(const UcxPerftestOptions& options, const Clock& clock) {
  if (!ChildProcess::FindExecutable(options.binary).ok()) {
    return NotFoundError(options.binary + " not installed (Debian: ucx-utils): run scripts/setup");
  }
  if (options.iterations == 0) return InvalidArgumentError("ucx_perftest: 0 iterations");
  WHARF_ASSIGN_OR_RETURN(uint16_t port, PickFreeTcpPort(options.address));
  const PinPlan pinning = PlanPinning(options.pin, options.client_cpu, options.server_cpu);
  std::vector<std::string> common = {"/usr/bin/env"};
  if (!options.tls.empty()) common.push_back("UCX_TLS=" + options.tls);
  if (!options.devices.empty()) common.push_back("UCX_NET_DEVICES=" + options.devices);
  common.push_back(options.binary);
  const std::vector<std::string> test = {"-t", options.test,
                                         "-s", std::to_string(options.size_bytes),
                                         "-n", std::to_string(options.iterations),
                                         "-p", std::to_string(port)};
  std::vector<std::string> server_argv = common;
  server_argv.insert(server_argv.end(), test.begin(), test.end());
  WHARF_ASSIGN_OR_RETURN(ChildProcess server,
                         ChildProcess::Exec(server_argv, pinning.pin ? pinning.server_cpu : -1));
  // Ready once its exchange port listens.
  const TimeNs ready_by = clock.NowNs() + kStartupTimeoutNs;
  while (true) {
    WHARF_ASSIGN_OR_RETURN(bool listening, TcpPortBusy(options.address, port));
    if (listening) break;
    if (auto exit = server.TryReap()) {
      return UnavailableError("ucx_perftest server exited (" + exit->ToString() +
                              "): " + QuoteOutput(server.Output()));
    }
    if (clock.NowNs() >= ready_by) {
      return DeadlineExceededError("ucx_perftest server did not listen within 5 s: " +
                                   QuoteOutput(server.Output()));
    }
    SleepNs(kStartupPollNs);
  }
  std::vector<std::string> client_argv = common;
  client_argv.push_back(options.address);
  client_argv.insert(client_argv.end(), test.begin(), test.end());
  WHARF_ASSIGN_OR_RETURN(ChildProcess client,
                         ChildProcess::Exec(client_argv, pinning.pin ? pinning.client_cpu : -1));
  auto client_exit = client.Wait(options.timeout_ns);
  if (!client_exit.ok()) {
    return DeadlineExceededError("ucx_perftest client did not finish within " +
                                 std::to_string(options.timeout_ns / kNsPerSec) + " s");
  }
  const ExitInfo server_exit = server.Stop(SIGTERM, 3 * kNsPerSec);
  Result<UcxPerftestResult> parsed = ParseUcxPerftestOutput(client.Output());
  if (!parsed.ok() || !client_exit->ok()) {
    return UnavailableError("ucx_perftest " + options.test + " failed (client " +
                            client_exit->ToString() + ", server " + server_exit.ToString() +
                            "): " + QuoteOutput(client.Output()));
  }
  parsed->pinning = pinning;
  return parsed;
}

}  // namespace wharf::bench
