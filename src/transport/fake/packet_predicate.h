// transport/fake/packet_predicate.h: PacketPredicate, how scenario tests pick
// packets on the fake network (for scripted faults and for the log filter),
// and small builders for the common cases.
//
// A predicate sees the sending host's name, the receiving host's name (or the
// destination address as text when no host owns it) and the packet's
// one-line description from the network's describer (e.g. "GRANT 10000").
// It never sees raw bytes: scenarios are written against descriptions so that
// they read like the packet log they are compared with.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wharf::transport::fake {

using PacketPredicate = std::function<bool(std::string_view src_host, std::string_view dst_host,
                                           std::string_view description)>;

// Any packet whose description starts with `prefix` ("" matches everything).
inline PacketPredicate DescriptionStartsWith(std::string prefix) {
  return [prefix = std::move(prefix)](std::string_view, std::string_view,
                                      std::string_view description) {
    return description.starts_with(prefix);
  };
}

// Any packet whose description starts with one of `prefixes`, e.g.
// {"DATA", "GRANT"} to log only the data/grant exchange.
inline PacketPredicate DescriptionStartsWithAnyOf(std::vector<std::string> prefixes) {
  return [prefixes = std::move(prefixes)](std::string_view, std::string_view,
                                          std::string_view description) {
    for (const std::string& p : prefixes) {
      if (description.starts_with(p)) return true;
    }
    return false;
  };
}

// Packets from `src_host` to `dst_host` whose description starts with
// `prefix`.
inline PacketPredicate FlowDescriptionStartsWith(std::string src_host, std::string dst_host,
                                                 std::string prefix = "") {
  return [src = std::move(src_host), dst = std::move(dst_host), prefix = std::move(prefix)](
             std::string_view s, std::string_view d, std::string_view description) {
    return s == src && d == dst && description.starts_with(prefix);
  };
}

}  // namespace wharf::transport::fake
