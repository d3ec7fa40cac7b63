// iperf3 runner: argv-built child processes, readiness from the server's
// "Server listening" line (flushed by --forceflush), JSON via nlohmann-json.
#include "bench/iperf3_runner.h"

#include <signal.h>

#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "bench/child_process.h"
#include "bench/sockets.h"

namespace wharf::bench {
namespace {

using Json = nlohmann::json;

constexpr DurationNs kStartupPollNs = 5 * kNsPerMs;

// The member `key` of `object` if `object` is an object holding it, else null.
const Json* Member(const Json* object, const char* key) {
  if (object == nullptr || !object->is_object()) return nullptr;
  auto it = object->find(key);
  return it == object->end() ? nullptr : &*it;
}

// Waits for the server to print that it listens. The server is left running
// on success; on failure the caller's ChildProcess kills and reaps it.
Status AwaitListening(ChildProcess& server, const Clock& clock, DurationNs timeout_ns) {
  const TimeNs deadline_ns = clock.NowNs() + timeout_ns;
  while (true) {
    if (server.Output().find("Server listening") != std::string::npos) return OkStatus();
    if (auto exit = server.TryReap()) {
      return UnavailableError("iperf3 server exited (" + exit->ToString() +
                              "): " + QuoteOutput(server.Output()));
    }
    if (clock.NowNs() >= deadline_ns) {
      return DeadlineExceededError("iperf3 server did not start listening within " +
                                   std::to_string(timeout_ns / kNsPerMs) +
                                   " ms: " + QuoteOutput(server.Output()));
    }
    SleepNs(kStartupPollNs);
  }
}

}  // namespace

Result<Iperf3Result> ParseIperf3ClientJson(std::string_view json_text) {
  // Anything iperf3 wrote to stderr shares the stream; the JSON document is
  // the outermost braces.
  const size_t open = json_text.find('{');
  const size_t close = json_text.rfind('}');
  if (open == std::string_view::npos || close == std::string_view::npos || close < open) {
    return InvalidArgumentError("iperf3 output holds no JSON: " +
                                QuoteOutput(std::string(json_text)));
  }
  const Json doc = Json::parse(json_text.substr(open, close - open + 1), nullptr,
                               /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.is_object()) {
    return InvalidArgumentError("iperf3 output is not valid JSON: " +
                                QuoteOutput(std::string(json_text)));
  }
  if (const Json* error = Member(&doc, "error"); error != nullptr && error->is_string()) {
    return UnavailableError("iperf3: " + error->get<std::string>());
  }
  Iperf3Result result;
  const Json* end = Member(&doc, "end");
  const Json* received = Member(end, "sum_received");
  const Json* sent = Member(end, "sum_sent");
  const Json* rx_bps = Member(received, "bits_per_second");
  if (rx_bps == nullptr || !rx_bps->is_number()) {
    return InvalidArgumentError("iperf3 JSON lacks end.sum_received.bits_per_second");
  }
  result.received_bits_per_second = rx_bps->get<double>();
  if (const Json* v = Member(received, "seconds"); v && v->is_number()) {
    result.seconds = v->get<double>();
  }
  if (const Json* v = Member(sent, "bits_per_second"); v && v->is_number()) {
    result.sent_bits_per_second = v->get<double>();
  }
  if (const Json* v = Member(sent, "retransmits"); v && v->is_number_integer()) {
    result.retransmits = v->get<int64_t>();
  }
  const Json* cpu = Member(end, "cpu_utilization_percent");
  if (const Json* v = Member(cpu, "host_total"); v && v->is_number()) {
    result.client_cpu_percent = v->get<double>();
  }
  if (const Json* v = Member(cpu, "remote_total"); v && v->is_number()) {
    result.server_cpu_percent = v->get<double>();
  }
  if (const Json* v = Member(Member(&doc, "start"), "version"); v && v->is_string()) {
    result.version = v->get<std::string>();
  }
  return result;
}

Result<Iperf3Result> RunIperf3(const Iperf3Options& options, const Clock& clock) {
  if (options.seconds < 1 || options.seconds > 3600) {
    return InvalidArgumentError("iperf3 duration " + std::to_string(options.seconds) +
                                " s: must be 1 to 3600 s");
  }
  if (!ChildProcess::FindExecutable(options.binary).ok()) {
    return NotFoundError(options.binary + " not installed: run scripts/setup");
  }
  // Validates the address and gives iperf3 the bare form ("::1", not "[::1]").
  WHARF_ASSIGN_OR_RETURN(SocketAddress parsed, ParseSocketAddress(options.address, 0));
  std::string host = parsed.ToString();
  host = host.substr(0, host.rfind(':'));
  if (!host.empty() && host.front() == '[') host = host.substr(1, host.size() - 2);

  std::string note;
  uint16_t port = options.port;
  if (port == 0) {
    WHARF_ASSIGN_OR_RETURN(port, PickFreeTcpPort(host));
  } else {
    WHARF_ASSIGN_OR_RETURN(bool busy, TcpPortBusy(host, port));
    if (busy) {
      if (!options.fallback_if_busy) {
        return UnavailableError("iperf3 port " + host + ":" + std::to_string(port) +
                                " is in use (pick another port, or 0 for any free one)");
      }
      WHARF_ASSIGN_OR_RETURN(port, PickFreeTcpPort(host));
      note = "port " + std::to_string(options.port) + " busy; used " + std::to_string(port);
    }
  }
  const std::string port_text = std::to_string(port);
  const PinPlan pinning = PlanPinning(options.pin, options.client_cpu, options.server_cpu);

  WHARF_ASSIGN_OR_RETURN(
      ChildProcess server,
      ChildProcess::Exec({options.binary, "-s", "-1", "-B", host, "-p", port_text, "--forceflush"},
                         pinning.pin ? pinning.server_cpu : -1));
  WHARF_RETURN_IF_ERROR(AwaitListening(server, clock, options.startup_timeout_ns));

  WHARF_ASSIGN_OR_RETURN(ChildProcess client,
                         ChildProcess::Exec({options.binary, "-c", host, "-p", port_text, "-t",
                                             std::to_string(options.seconds), "-J"},
                                            pinning.pin ? pinning.client_cpu : -1));
  const DurationNs client_budget_ns = options.seconds * kNsPerSec + options.slack_ns;
  auto client_exit = client.Wait(client_budget_ns);
  if (!client_exit.ok()) {
    // Both are killed and reaped by their destructors on return.
    return DeadlineExceededError("iperf3 client did not finish within " +
                                 std::to_string(client_budget_ns / kNsPerSec) + " s");
  }
  auto parsed_result = ParseIperf3ClientJson(client.Output());
  // The one-off server exits after its test; a failed test can leave it
  // waiting for another client, so it gets a moment and then a signal.
  const ExitInfo server_exit = server.Stop(SIGTERM, 3 * kNsPerSec);
  if (!parsed_result.ok()) {
    std::string message = parsed_result.status().message();
    if (!client_exit->ok()) message += " (client " + client_exit->ToString() + ")";
    if (!server_exit.ok()) {
      message += "; server " + server_exit.ToString() + ": " + QuoteOutput(server.Output());
    }
    return Status(parsed_result.status().code(), message);
  }
  Iperf3Result result = std::move(parsed_result).value();
  result.port = port;
  result.pinning = pinning;
  result.note = note;
  return result;
}

}  // namespace wharf::bench
