// Reading a cluster node's summary line.
#include "bench/node_summary.h"

#include <string>

namespace wharf::bench {

namespace {

// NetnsProcess and Subprocess alike (both have WaitFor, Stdout, Stderr).
template <typename Process>
Result<nlohmann::json> WaitAndParse(Process& node, const std::string& who, DurationNs timeout_ns) {
  WHARF_ASSIGN_OR_RETURN(int code, node.WaitFor(timeout_ns));
  if (code != 0) {
    return InternalError(who + " exited " + std::to_string(code) + ": " + node.Stderr());
  }
  const std::string& out = node.Stdout();
  const size_t at = out.rfind("summary ");
  if (at == std::string::npos) return InternalError(who + " wrote no summary");
  const size_t eol = out.find('\n', at);
  const size_t begin = at + 8;
  nlohmann::json j = nlohmann::json::parse(
      out.substr(begin, eol == std::string::npos ? std::string::npos : eol - begin), nullptr, false);
  if (j.is_discarded()) return InternalError(who + ": summary is not JSON: " + out.substr(at));
  return j;
}

}  // namespace

Result<nlohmann::json> WaitForNodeSummary(netns::NetnsProcess& node, DurationNs timeout_ns) {
  return WaitAndParse(node, "node on host " + std::to_string(node.host()), timeout_ns);
}

Result<nlohmann::json> WaitForNodeSummary(netns::Subprocess& node, const std::string& who,
                                          DurationNs timeout_ns) {
  return WaitAndParse(node, who, timeout_ns);
}

}  // namespace wharf::bench
