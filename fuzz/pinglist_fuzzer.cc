// fuzz/pinglist_fuzzer.cc: arbitrary bytes as a pinglist, then every host's
// targets; errors are fine, crashes and hangs are not.
//
// Beyond not crashing, what ParsePinglist promises is checked: an error is
// kInvalidArgument (kResourceExhausted only if memory ran out) naming the
// source; a list is within its bounds, its indices in range, each host
// found again by its name and by its Homa address; and TargetsOf never
// names the probing host, keeps its order and its cap.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <string_view>
#include <vector>

#include "fuzz_fail.h"
#include "mesh/pinglist.h"

using wharf::fuzz::Fail;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  using namespace wharf::mesh;
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  Result<Pinglist> parsed = ParsePinglist(text, "fuzz.yaml");
  if (!parsed.ok()) {
    const Status status = parsed.status();
    if ((status.code() != StatusCode::kInvalidArgument &&
         status.code() != StatusCode::kResourceExhausted) ||
        !status.message().starts_with("fuzz.yaml")) {
      std::fprintf(stderr, "pinglist_fuzzer: unexpected error: %s\n", status.ToString().c_str());
      std::abort();
    }
    return 0;
  }
  const Pinglist& list = *parsed;
  const size_t n = list.hosts.size();
  if (list.version.empty()) Fail("empty version");
  if (n > kMaxPinglistHosts || list.groups.size() > kMaxPinglistGroups ||
      list.rules.size() > kMaxPinglistRules) {
    Fail("over a bound");
  }
  for (const auto& [name, hosts] : list.groups) {
    for (const size_t h : hosts) {
      if (h >= n) Fail("group host out of range");
    }
  }
  for (const PinglistRule& rule : list.rules) {
    for (const size_t h : rule.from) {
      if (h >= n) Fail("rule from out of range");
    }
    for (const size_t h : rule.to) {
      if (h >= n) Fail("rule to out of range");
    }
    if (rule.transports.empty()) Fail("rule without transports");
  }
  for (size_t self = 0; self < n; ++self) {
    const PinglistHost& host = list.hosts[self];
    Result<size_t> by_name = FindSelf(list, host.name, {}, 0, 0);
    if (!by_name.ok() || *by_name != self) Fail("host not found by its name");
    const transport::NetAddress local[] = {host.homa};
    Result<size_t> by_address = FindSelf(list, "", local, host.homa.port(), 0);
    if (!by_address.ok() || *by_address != self) Fail("host not found by its homa address");

    Result<std::vector<ProbeTarget>> targets = TargetsOf(list, self);
    if (!targets.ok()) {
      if (targets.status().code() != StatusCode::kInvalidArgument) Fail("unexpected TargetsOf error");
      continue;
    }
    if (targets->size() > kMaxTargetsPerHost) Fail("over the target cap");
    for (size_t i = 0; i < targets->size(); ++i) {
      const ProbeTarget& t = (*targets)[i];
      if (t.host >= n || t.host == self) Fail("bad target host");
      if (t.origin.empty()) Fail("target without origin");
      if (i > 0) {
        const ProbeTarget& prev = (*targets)[i - 1];
        if (prev.host > t.host || (prev.host == t.host && prev.transport >= t.transport)) {
          Fail("targets out of order");
        }
      }
    }
  }
  return 0;
}
