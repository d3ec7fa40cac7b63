// `wharf status`: asks wharfd over its control socket (no attach) and prints
// the answer.
#include "tools/status_command.h"

#include <CLI/CLI.hpp>

#include <cstdio>
#include <nlohmann/json.hpp>

#include "client/daemon_link.h"

namespace wharf::tools {
namespace {

std::string HumanBytes(uint64_t b) {
  const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
  double v = static_cast<double>(b);
  int u = 0;
  while (v >= 1024 && u < 4) {
    v /= 1024;
    ++u;
  }
  char out[32];
  std::snprintf(out, sizeof out, u == 0 ? "%.0f %s" : "%.1f %s", v, units[u]);
  return out;
}

uint64_t U(const nlohmann::json& j, const char* key) {
  return j.contains(key) && j[key].is_number_unsigned() ? j[key].get<uint64_t>() : 0;
}

void PrintTable(const nlohmann::json& doc) {
  const auto& d = doc["daemon"];
  std::printf("wharfd pid %llu, socket %s, up %llu s; applications attached %llu, detached %llu, "
              "refused %llu\n",
              static_cast<unsigned long long>(U(d, "pid")),
              d.value("socket", std::string("?")).c_str(),
              static_cast<unsigned long long>(U(d, "uptime_seconds")),
              static_cast<unsigned long long>(U(d, "applications_attached")),
              static_cast<unsigned long long>(U(d, "applications_detached")),
              static_cast<unsigned long long>(U(d, "attaches_refused")));
  // The loop's watchdog: every application waits while a turn runs.
  if (d.contains("loop") && d["loop"].is_object()) {
    const auto& loop = d["loop"];
    std::printf("loop: %llu stalls over %.1f ms, %llu of them blocked in the kernel (longest "
                "turn %.1f ms, p99 %.3f ms); unattached connections %llu\n\n",
                static_cast<unsigned long long>(U(loop, "stalls")),
                static_cast<double>(U(loop, "stall_threshold_us")) / 1000.0,
                static_cast<unsigned long long>(U(loop, "stalls_blocked")),
                static_cast<double>(U(loop, "max_turn_us")) / 1000.0,
                static_cast<double>(U(loop, "p99_turn_us")) / 1000.0,
                static_cast<unsigned long long>(U(d, "unattached_connections")));
  } else {
    std::printf("\n");
  }
  std::printf("%-4s %-8s %-6s %-14s %-9s %-32s %10s %10s %8s %6s %10s %10s %5s\n", "ID", "PID",
              "UID", "PROGRAM", "STATE", "ENDPOINT", "HEAP", "RECV-HELD", "INFLIGHT", "CONNS",
              "SENT", "RECEIVED", "BAD");
  for (const auto& a : doc["applications"]) {
    std::printf("%-4llu %-8llu %-6llu %-14.14s %-9.9s %-32.32s %10s %10s %8llu %6llu %10s %10s %5llu\n",
                static_cast<unsigned long long>(U(a, "id")),
                static_cast<unsigned long long>(U(a, "pid")),
                static_cast<unsigned long long>(U(a, "uid")),
                a.value("program", std::string()).c_str(), a.value("state", std::string()).c_str(),
                a.value("endpoint", std::string()).c_str(), HumanBytes(U(a, "heap_bytes")).c_str(),
                HumanBytes(U(a, "receive_bytes_in_use")).c_str(),
                static_cast<unsigned long long>(U(a, "inflight")),
                static_cast<unsigned long long>(U(a, "connections")),
                HumanBytes(U(a, "bytes_sent")).c_str(), HumanBytes(U(a, "bytes_received")).c_str(),
                static_cast<unsigned long long>(U(a, "bad_commands")));
    // Where a transport names what carries each peer (ucx://: UCX's lanes).
    if (a.contains("paths") && a["paths"].is_array()) {
      for (const auto& p : a["paths"]) {
        if (!p.is_object()) continue;
        std::printf("     path to %s: %s\n", p.value("peer", std::string("?")).c_str(),
                    p.value("path", std::string("?")).c_str());
      }
    }
  }
  if (doc["applications"].empty()) std::printf("(no applications attached)\n");
  std::printf("\n%-32s %14s %14s %14s %14s\n", "TRANSPORT", "PKTS-SENT", "PKTS-RECV",
              "BYTES-SENT", "BYTES-RECV");
  for (const auto& item : doc["transports"].items()) {
    // Named, not a structured binding: lambdas cannot capture those (C++20
    // with clang 14).
    const std::string name = item.key();
    const nlohmann::json& c = item.value();
    // The socket's own counters (shared by every application on it).
    std::string scheme = name.substr(0, name.find(':'));
    auto get = [&](const std::string& suffix) {
      for (const std::string& prefix : {std::string("udp."), scheme + "."}) {
        if (c.contains(prefix + suffix)) return c[prefix + suffix].get<uint64_t>();
      }
      return uint64_t{0};
    };
    std::printf("%-32s %14llu %14llu %14s %14s\n", name.c_str(),
                static_cast<unsigned long long>(get("packets_sent")),
                static_cast<unsigned long long>(get("packets_received")),
                HumanBytes(get("bytes_sent")).c_str(), HumanBytes(get("bytes_received")).c_str());
  }
}

}  // namespace

void AddStatusFlags(CLI::App& app, StatusOptions& o) {
  app.add_option("--socket", o.socket,
                 "wharfd's control socket (default: $WHARF_SOCKET, else /run/wharf/wharfd.sock)");
  app.add_flag("--json", o.json, "Print the daemon's answer as JSON");
}

int RunStatus(const StatusOptions& o) {
  const std::string path = internal::DaemonSocketPath(o.socket);
  Result<std::string> json = internal::QueryDaemonStatus(path, std::chrono::seconds(2));
  if (!json.ok()) {
    std::fprintf(stderr, "wharf status: %s\n", json.status().ToString().c_str());
    return 1;
  }
  if (o.json) {
    std::printf("%s\n", json->c_str());
    return 0;
  }
  nlohmann::json doc = nlohmann::json::parse(*json, nullptr, /*allow_exceptions=*/false);
  if (doc.is_discarded() || !doc.contains("applications")) {
    std::fprintf(stderr, "wharf status: wharfd sent something that is not its status\n");
    return 1;
  }
  try {
    PrintTable(doc);
  } catch (const nlohmann::json::exception& e) {
    // A field of an unexpected type (another wharfd version): say so, not abort.
    std::fprintf(stderr, "wharf status: wharfd's status has an unexpected shape (%s); try --json\n",
                 e.what());
    return 1;
  }
  return 0;
}

}  // namespace wharf::tools
