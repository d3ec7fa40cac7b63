// The pinglist: reading it through ConfigDoc (shape, values, hosts, groups,
// rules, in that order), and the two questions a daemon asks of it: which
// host am I, and whom do I probe.
#include "mesh/pinglist.h"

#include <arpa/inet.h>
#include <fmt/format.h>
#include <netinet/in.h>

#include <algorithm>
#include <array>
#include <cerrno>
#include <charconv>
#include <tuple>
#include <unordered_map>

#include "base/config.h"
#include "base/config_value.h"
#include "base/text.h"

namespace wharf::mesh {
namespace {

using transport::NetAddress;

constexpr uint16_t kDefaultHomaPort = 4000;  // wharfd's listen.homa default
constexpr uint16_t kDefaultTcpPort = 4001;   // and listen.tcp's
constexpr size_t kMaxNameBytes = 64;         // host and group names
constexpr size_t kMaxVersionBytes = 128;
// Names listed in a message before "... (N in all)".
constexpr size_t kMaxNamesListed = 16;

// Text from the file or the caller, quoted for a message (escaped: a YAML
// double-quoted string can hold control characters).
std::string Quote(std::string_view text) { return QuoteForError(PrintableText(text, 256)); }

// "a, b, c" or "a, b, ... (40 in all)".
template <typename Range, typename NameOf>
std::string ListNames(const Range& items, NameOf name_of) {
  std::string out;
  size_t n = 0;
  for (const auto& item : items) {
    if (n == kMaxNamesListed) {
      out += fmt::format(", ... ({} in all)", std::size(items));
      break;
    }
    if (n++ > 0) out += ", ";
    out += name_of(item);
  }
  return out;
}

// The largest unit that shows `ns` exactly, in the file's spelling: "500ms".
std::string FormatDuration(DurationNs ns) {
  if (ns % kNsPerSec == 0) return fmt::format("{}s", ns / kNsPerSec);
  if (ns % kNsPerMs == 0) return fmt::format("{}ms", ns / kNsPerMs);
  if (ns % kNsPerUs == 0) return fmt::format("{}us", ns / kNsPerUs);
  return fmt::format("{}ns", ns);
}

// The IP alone, as inet_ntop writes it: "198.18.0.1", "fd00::1".
std::string IpText(const NetAddress& address) {
  char text[INET6_ADDRSTRLEN] = {};
  inet_ntop(address.is_v6() ? AF_INET6 : AF_INET, address.ip_bytes().data(), text, sizeof(text));
  return text;
}

uint64_t Fnv1a64(std::string_view bytes) {
  uint64_t hash = 0xcbf29ce484222325ULL;
  for (const char c : bytes) {
    hash ^= static_cast<unsigned char>(c);
    hash *= 0x100000001b3ULL;
  }
  return hash;
}

bool IsAddressChar(char c) {
  return (c >= '0' && c <= '9') || (c >= 'a' && c <= 'f') || (c >= 'A' && c <= 'F') || c == '.' ||
         c == ':';
}

// A host's numeric address: "198.18.0.1", "fd00::1" or "[fd00::1]"; the
// result has port 0. Errors are "expected ..., got ..." for the caller to
// place.
Result<NetAddress> ParseHostIp(std::string_view text) {
  auto expected = [&](std::string_view hint) {
    return InvalidArgumentError(fmt::format("expected a numeric IPv4 or IPv6 address, got {}{}",
                                            Quote(text), hint));
  };
  constexpr std::string_view kPortHint = " (give ports as homa_port and tcp_port)";
  std::string_view ip = text;
  const bool bracketed = ip.size() >= 2 && ip.front() == '[' && ip.back() == ']';
  if (bracketed) ip = ip.substr(1, ip.size() - 2);
  // Also keeps NULs and names away from inet_pton.
  if (ip.empty() || ip.size() > INET6_ADDRSTRLEN ||
      !std::all_of(ip.begin(), ip.end(), IsAddressChar)) {
    if (NetAddress::Parse(text).ok()) return expected(kPortHint);  // "[fd00::1]:4000"
    return expected("");
  }
  const std::string ip_string(ip);
  std::array<uint8_t, 16> bytes{};
  NetAddress address;
  if (ip.find(':') != std::string_view::npos) {
    if (inet_pton(AF_INET6, ip_string.c_str(), bytes.data()) != 1) {
      return expected(NetAddress::Parse(text).ok() ? kPortHint : "");  // "198.18.0.1:4000"
    }
    address = NetAddress::Ipv6(bytes, 0);
  } else {
    in_addr v4{};
    if (bracketed || inet_pton(AF_INET, ip_string.c_str(), &v4) != 1) return expected("");
    address = NetAddress::Ipv4(ntohl(v4.s_addr), 0);
  }
  if (std::all_of(address.ip_bytes().begin(), address.ip_bytes().end(),
                  [](uint8_t b) { return b == 0; })) {
    return expected(" (the any-address: give the host's own)");
  }
  return address;
}

// Host names: short enough for a label, and nothing a shell, a URL or a
// Prometheus label would need quoted beyond ':' (IPv6 names have them).
bool IsValidHostName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxNameBytes &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_' || c == '.' || c == ':';
         });
}

bool IsValidGroupName(std::string_view name) {
  return !name.empty() && name.size() <= kMaxNameBytes &&
         std::all_of(name.begin(), name.end(), [](char c) {
           return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
                  c == '-' || c == '_';
         });
}

// ConfigDoc numbers list items "0", "1", ...; a map has names.
bool IsIndexList(const std::vector<std::string>& children) {
  for (size_t i = 0; i < children.size(); ++i) {
    if (children[i] != std::to_string(i)) return false;
  }
  return !children.empty();
}

std::string ParentKey(std::string_view key) {
  const size_t dot = key.rfind('.');
  return dot == std::string_view::npos ? std::string() : std::string(key.substr(0, dot));
}

// Reads one pinglist out of a ConfigDoc; one per ParsePinglist call.
//
// Errors come in the order a person fixes them: the shape and values of
// each section as it is read; then unknown keys (a misspelt "from" is
// reported as such, not as a missing one); then missing keys; then
// references between sections (a rule's unknown group).
class PinglistReader {
 public:
  PinglistReader(const ConfigDoc& doc, std::string source) : doc_(doc) {
    list_.source = std::move(source);
  }

  Result<Pinglist> Read(std::string_view text) {
    WHARF_RETURN_IF_ERROR(ReadVersion(text));
    WHARF_RETURN_IF_ERROR(ReadDefaults());
    WHARF_RETURN_IF_ERROR(ReadGroups());
    WHARF_RETURN_IF_ERROR(ReadRules("mesh"));
    WHARF_RETURN_IF_ERROR(ReadRules("arrows"));
    WHARF_RETURN_IF_ERROR(doc_.CheckNoUnknownKeys());
    WHARF_RETURN_IF_ERROR(missing_);
    WHARF_RETURN_IF_ERROR(ResolveRules());
    return std::move(list_);
  }

 private:
  // A probe class with its transports, as defaults and rules give them.
  struct ClassSpec {
    std::vector<ProbeTransport> transports;
    ProbeClass probe;
  };
  // A rule read but not yet resolved: group names still as written.
  struct PendingRule {
    std::string key;  // "mesh.0"
    bool is_mesh = false;
    std::string from, to;  // group names (both the group's, for mesh)
    ClassSpec spec;
  };
  // What the file holds at a key.
  struct Node {
    enum class Kind { kEmpty, kScalar, kList, kMap } kind = Kind::kEmpty;
    std::string scalar;                 // for kScalar
    std::vector<std::string> children;  // for kList and kMap
  };

  // The line ConfigDoc recorded for `key`, or 0 if it has none (absent, or
  // given no value). ConfigDoc keeps lines to itself, but every getter's
  // error starts with "<source>:<line>: " (config.h), so this asks for an
  // integer no text can be (at least 1 and at most 0) and reads the line
  // from the refusal. Only on the way to an error.
  int LineOf(std::string_view key) const { return doc_.LineOf(key); }

  // The line of `key`, or of its nearest ancestor that has one.
  int NearestLine(std::string_view key) const {
    std::string at(key);
    while (true) {
      if (const int line = LineOf(at); line > 0) return line;
      if (at.empty()) return 0;
      at = ParentKey(at);
    }
  }

  // "<source>:<line>: <key>: <message>".
  Status ErrorAt(std::string_view key, std::string_view message) const {
    const int line = NearestLine(key);
    if (line == 0) return InvalidArgumentError(fmt::format("{}: {}: {}", list_.source, key, message));
    return InvalidArgumentError(fmt::format("{}:{}: {}: {}", list_.source, line, key, message));
  }

  // "groups.rack-a.1, line 5": another place, inside a message.
  std::string Where(std::string_view key) const {
    const int line = NearestLine(key);
    return line == 0 ? std::string(key) : fmt::format("{}, line {}", key, line);
  }

  Result<Node> Look(std::string_view key) const {
    Node node;
    // Asked even when absent or empty, so that the key is known: "groups:"
    // with nothing under it is no unknown key, and "grups" has a match.
    Result<std::string> scalar = doc_.GetString(key, "");
    if (!doc_.Has(key)) return node;
    if (scalar.ok()) {
      node.kind = Node::Kind::kScalar;
      node.scalar = std::move(*scalar);
      return node;
    }
    WHARF_ASSIGN_OR_RETURN(node.children, doc_.ChildKeys(key));
    node.kind = IsIndexList(node.children) ? Node::Kind::kList : Node::Kind::kMap;
    return node;
  }

  // The items of the list at `key` (none if absent); `what` completes
  // "expected <what>" otherwise. An empty map passes for an empty list.
  Result<std::vector<std::string>> ListAt(std::string_view key, std::string_view what) const {
    WHARF_ASSIGN_OR_RETURN(Node node, Look(key));
    switch (node.kind) {
      case Node::Kind::kEmpty:
        return std::vector<std::string>();
      case Node::Kind::kScalar:
        return ErrorAt(key, fmt::format("expected {}, got {}", what, Quote(node.scalar)));
      case Node::Kind::kMap:
        if (!node.children.empty()) return ErrorAt(key, fmt::format("expected {}, got a map", what));
        return std::vector<std::string>();
      case Node::Kind::kList:
        break;
    }
    return std::move(node.children);
  }

  // The names in the map at `key`. Absent is an empty map when `optional`,
  // an error otherwise (a list item that must be a map).
  Result<std::vector<std::string>> MapAt(std::string_view key, std::string_view what,
                                         bool optional) const {
    WHARF_ASSIGN_OR_RETURN(Node node, Look(key));
    switch (node.kind) {
      case Node::Kind::kEmpty:
        if (optional) return std::vector<std::string>();
        return ErrorAt(key, fmt::format("expected {}, got an empty item", what));
      case Node::Kind::kScalar:
        return ErrorAt(key, fmt::format("expected {}, got {}", what, Quote(node.scalar)));
      case Node::Kind::kList:
        return ErrorAt(key, fmt::format("expected {}, got a list", what));
      case Node::Kind::kMap:
        break;
    }
    return std::move(node.children);
  }

  // Records the first required key found missing; Read reports it after the
  // unknown-key check.
  void Missing(std::string_view item_key, std::string_view message) {
    if (missing_.ok()) missing_ = ErrorAt(item_key, message);
  }

  Status ReadVersion(std::string_view text) {
    WHARF_ASSIGN_OR_RETURN(list_.version, doc_.GetString("version", ""));
    if (!doc_.Has("version")) {
      list_.version = fmt::format("fnv1a64:{:016x}", Fnv1a64(text));
      return OkStatus();
    }
    const std::string& v = list_.version;
    if (v.empty() || v.size() > kMaxVersionBytes ||
        !std::all_of(v.begin(), v.end(), [](char c) { return c >= 0x20 && c <= 0x7e; })) {
      return ErrorAt("version",
                     fmt::format("expected printable ASCII text of 1 to {} characters, got {}",
                                 kMaxVersionBytes, Quote(v)));
    }
    return OkStatus();
  }

  Status ReadDefaults() {
    WHARF_RETURN_IF_ERROR(
        MapAt("defaults", "a map of probe settings, like {interval: 1s}", true).status());
    WHARF_ASSIGN_OR_RETURN(
        defaults_, ReadClass("defaults", ClassSpec{.transports = {ProbeTransport::kHoma}}));
    WHARF_ASSIGN_OR_RETURN(default_homa_port_, ReadPort("defaults.homa_port", kDefaultHomaPort));
    WHARF_ASSIGN_OR_RETURN(default_tcp_port_, ReadPort("defaults.tcp_port", kDefaultTcpPort));
    return OkStatus();
  }

  // The class keys under `prefix` (transports, interval, timeout, priority,
  // size); what is not given is `base`'s.
  Result<ClassSpec> ReadClass(const std::string& prefix, const ClassSpec& base) const {
    ClassSpec spec;
    WHARF_ASSIGN_OR_RETURN(spec.transports, ReadTransports(prefix + ".transports", base.transports));
    WHARF_ASSIGN_OR_RETURN(spec.probe.interval,
                           ReadDuration(prefix + ".interval", base.probe.interval,
                                        kMinProbeInterval, kMaxProbeInterval));
    WHARF_ASSIGN_OR_RETURN(spec.probe.timeout,
                           ReadDuration(prefix + ".timeout", base.probe.timeout, kMinProbeTimeout,
                                        kMaxProbeTimeout));
    const std::string priority_key = prefix + ".priority";
    WHARF_ASSIGN_OR_RETURN(uint64_t priority, doc_.GetUint(priority_key, base.probe.priority));
    if (priority > kMaxProbePriority) {
      return ErrorAt(priority_key, fmt::format("expected a priority from 0 to {}, got {}",
                                               kMaxProbePriority, priority));
    }
    spec.probe.priority = static_cast<uint8_t>(priority);
    const std::string size_key = prefix + ".size";
    WHARF_ASSIGN_OR_RETURN(uint64_t size, doc_.GetBytes(size_key, base.probe.size_bytes));
    if (size < kMinProbeBytes || size > kMaxProbeBytes) {
      return ErrorAt(size_key, fmt::format("expected {} to {} bytes, got {}", kMinProbeBytes,
                                           kMaxProbeBytes, size));
    }
    spec.probe.size_bytes = static_cast<uint32_t>(size);
    return spec;
  }

  Result<std::vector<ProbeTransport>> ReadTransports(const std::string& key,
                                                     const std::vector<ProbeTransport>& base) const {
    WHARF_ASSIGN_OR_RETURN(std::vector<std::string> names, doc_.GetStringList(key, {}));
    if (!doc_.Has(key)) return base;
    if (names.empty()) return ErrorAt(key, "expected at least one of homa, tcp, got an empty list");
    std::vector<ProbeTransport> transports;
    for (size_t i = 0; i < names.size(); ++i) {
      const std::string item_key = fmt::format("{}.{}", key, i);
      ProbeTransport t;
      if (names[i] == "homa") {
        t = ProbeTransport::kHoma;
      } else if (names[i] == "tcp") {
        t = ProbeTransport::kTcp;
      } else if (names[i] == "ucx") {
        return ErrorAt(item_key, "ucx:// is not built yet (transports: homa, tcp)");
      } else {
        return ErrorAt(item_key, fmt::format("expected homa or tcp, got {}", Quote(names[i])));
      }
      if (std::find(transports.begin(), transports.end(), t) != transports.end()) {
        return ErrorAt(item_key, fmt::format("'{}' is listed twice", names[i]));
      }
      transports.push_back(t);
    }
    std::sort(transports.begin(), transports.end());
    return transports;
  }

  Result<DurationNs> ReadDuration(const std::string& key, DurationNs base, DurationNs min,
                                  DurationNs max) const {
    WHARF_ASSIGN_OR_RETURN(DurationNs value, doc_.GetDuration(key, base));
    if (value < min || value > max) {
      return ErrorAt(key, fmt::format("expected {} to {}, got {}", FormatDuration(min),
                                      FormatDuration(max), FormatDuration(value)));
    }
    return value;
  }

  Result<uint16_t> ReadPort(const std::string& key, uint16_t base) const {
    WHARF_ASSIGN_OR_RETURN(uint64_t port, doc_.GetUint(key, base));
    if (port == 0 || port > 65535) {
      return ErrorAt(key, fmt::format("expected a port from 1 to 65535, got {}", port));
    }
    return static_cast<uint16_t>(port);
  }

  Status ReadGroups() {
    WHARF_ASSIGN_OR_RETURN(Node groups, Look("groups"));
    constexpr std::string_view kWhat =
        "a map from group names to lists of hosts, like {rack-a: [198.18.0.1]}";
    if (groups.kind == Node::Kind::kScalar) {
      return ErrorAt("groups", fmt::format("expected {}, got {}", kWhat, Quote(groups.scalar)));
    }
    if (groups.kind == Node::Kind::kList) {
      return ErrorAt("groups", fmt::format("expected {}, got a list", kWhat));
    }
    for (const std::string& name : groups.children) {
      const std::string key = "groups." + name;
      if (list_.groups.size() == kMaxPinglistGroups) {
        return ErrorAt(key, fmt::format("more than {} groups", kMaxPinglistGroups));
      }
      if (!IsValidGroupName(name)) {
        return ErrorAt(key, fmt::format("expected a group name of letters, digits, '-' and '_' "
                                        "(at most {}), got {}",
                                        kMaxNameBytes, Quote(name)));
      }
      WHARF_ASSIGN_OR_RETURN(
          std::vector<std::string> items,
          ListAt(key, "a list of hosts, like [198.18.0.1, {name: db1, address: 198.18.0.2}]"));
      group_by_name_.emplace(name, list_.groups.size());
      list_.groups.emplace_back(name, std::vector<size_t>());
      // Where each host was listed in this group, to refuse it twice.
      std::unordered_map<size_t, std::string> listed_at;
      for (const std::string& item : items) {
        WHARF_RETURN_IF_ERROR(ReadHost(fmt::format("{}.{}", key, item), listed_at));
      }
    }
    return OkStatus();
  }

  // One item of a group's list: "198.18.0.1" or {name, address, homa_port,
  // tcp_port}. Adds it to the last group.
  Status ReadHost(const std::string& key, std::unordered_map<size_t, std::string>& listed_at) {
    constexpr std::string_view kWhat =
        "a host: an address, or {name: db1, address: 198.18.0.2, homa_port: 4100}";
    WHARF_ASSIGN_OR_RETURN(Node node, Look(key));
    std::string name;
    NetAddress ip;
    uint16_t homa_port = default_homa_port_;
    uint16_t tcp_port = default_tcp_port_;
    switch (node.kind) {
      case Node::Kind::kEmpty:
        return ErrorAt(key, fmt::format("expected {}, got an empty item", kWhat));
      case Node::Kind::kList:
        return ErrorAt(key, fmt::format("expected {}, got a list", kWhat));
      case Node::Kind::kScalar: {
        Result<NetAddress> parsed = ParseHostIp(node.scalar);
        if (!parsed.ok()) return ErrorAt(key, parsed.status().message());
        ip = *parsed;
        name = IpText(ip);
        break;
      }
      case Node::Kind::kMap: {
        const std::string name_key = key + ".name";
        const std::string address_key = key + ".address";
        WHARF_ASSIGN_OR_RETURN(name, doc_.GetString(name_key, ""));
        WHARF_ASSIGN_OR_RETURN(std::string address, doc_.GetString(address_key, ""));
        WHARF_ASSIGN_OR_RETURN(homa_port, ReadPort(key + ".homa_port", default_homa_port_));
        WHARF_ASSIGN_OR_RETURN(tcp_port, ReadPort(key + ".tcp_port", default_tcp_port_));
        if (doc_.Has(name_key) && !IsValidHostName(name)) {
          return ErrorAt(name_key, fmt::format("expected a name of letters, digits, '-', '_', "
                                               "'.' and ':' (at most {}), got {}",
                                               kMaxNameBytes, Quote(name)));
        }
        if (!doc_.Has(address_key)) {
          Missing(key, "missing key 'address' (every host needs one: {name: db1, address: "
                       "198.18.0.2})");
          return OkStatus();
        }
        Result<NetAddress> parsed = ParseHostIp(address);
        if (!parsed.ok()) return ErrorAt(address_key, parsed.status().message());
        ip = *parsed;
        if (!doc_.Has(name_key)) name = IpText(ip);
        break;
      }
    }
    WHARF_ASSIGN_OR_RETURN(size_t host, AddHost(key, name, ip, homa_port, tcp_port));
    auto& group = list_.groups.back();
    if (auto [at, added] = listed_at.emplace(host, key); !added) {
      return ErrorAt(key, fmt::format("host '{}' is already in group {} ({})", name, group.first,
                                      Where(at->second)));
    }
    group.second.push_back(host);
    return OkStatus();
  }

  // "198.18.0.2 with homa_port 4100 and tcp_port 4101".
  static std::string Describe(const NetAddress& homa, const NetAddress& tcp) {
    return fmt::format("{} with homa_port {} and tcp_port {}", IpText(homa), homa.port(),
                       tcp.port());
  }

  // The index of the host named `name`, added if new.
  Result<size_t> AddHost(const std::string& key, const std::string& name, const NetAddress& ip,
                         uint16_t homa_port, uint16_t tcp_port) {
    const NetAddress homa = ip.WithPort(homa_port);
    const NetAddress tcp = ip.WithPort(tcp_port);
    if (auto it = host_by_name_.find(name); it != host_by_name_.end()) {
      const PinglistHost& known = list_.hosts[it->second];
      if (known.homa != homa || known.tcp != tcp) {
        return ErrorAt(key, fmt::format("host '{}' is already {} ({}), not {}", name,
                                        Describe(known.homa, known.tcp),
                                        Where(host_key_[it->second]), Describe(homa, tcp)));
      }
      return it->second;
    }
    // Two names for one daemon would probe it twice and make FindSelf
    // ambiguous.
    for (const auto& [table, address, port_key] :
         {std::tuple(&host_by_homa_, homa, "homa_port"), std::tuple(&host_by_tcp_, tcp, "tcp_port")}) {
      if (auto it = table->find(address); it != table->end()) {
        return ErrorAt(key, fmt::format("{} with {} {} is already host '{}' ({}); one daemon, one "
                                        "name",
                                        IpText(address), port_key, address.port(),
                                        list_.hosts[it->second].name, Where(host_key_[it->second])));
      }
    }
    if (list_.hosts.size() == kMaxPinglistHosts) {
      return ErrorAt(key, fmt::format("more than {} hosts", kMaxPinglistHosts));
    }
    const size_t index = list_.hosts.size();
    list_.hosts.push_back(PinglistHost{.name = name, .homa = homa, .tcp = tcp});
    host_key_.push_back(key);
    host_by_name_.emplace(name, index);
    host_by_homa_.emplace(homa, index);
    host_by_tcp_.emplace(tcp, index);
    return index;
  }

  // The items of "mesh" or "arrows".
  Status ReadRules(std::string_view section) {
    const bool is_mesh = section == "mesh";
    WHARF_ASSIGN_OR_RETURN(
        std::vector<std::string> items,
        ListAt(section, is_mesh ? "a list of rules, like [{group: rack-a}]"
                                : "a list of rules, like [{from: rack-a, to: rack-b}]"));
    for (const std::string& item : items) {
      PendingRule rule{.key = fmt::format("{}.{}", section, item), .is_mesh = is_mesh};
      if (pending_.size() == kMaxPinglistRules) {
        return ErrorAt(rule.key,
                       fmt::format("more than {} rules (mesh and arrows together)", kMaxPinglistRules));
      }
      WHARF_RETURN_IF_ERROR(MapAt(rule.key,
                                  is_mesh ? "a rule like {group: rack-a, interval: 1s}"
                                          : "a rule like {from: rack-a, to: rack-b, interval: 1s}",
                                  false)
                                .status());
      if (is_mesh) {
        WHARF_ASSIGN_OR_RETURN(rule.from, doc_.GetString(rule.key + ".group", ""));
        rule.to = rule.from;
        if (!doc_.Has(rule.key + ".group")) {
          Missing(rule.key, "missing key 'group' (the group whose hosts probe each other)");
        }
      } else {
        WHARF_ASSIGN_OR_RETURN(rule.from, doc_.GetString(rule.key + ".from", ""));
        WHARF_ASSIGN_OR_RETURN(rule.to, doc_.GetString(rule.key + ".to", ""));
        if (!doc_.Has(rule.key + ".from")) {
          Missing(rule.key, "missing key 'from' (the group whose hosts probe)");
        }
        if (!doc_.Has(rule.key + ".to")) {
          Missing(rule.key, "missing key 'to' (the group whose hosts are probed)");
        }
      }
      WHARF_ASSIGN_OR_RETURN(rule.spec, ReadClass(rule.key, defaults_));
      pending_.push_back(std::move(rule));
    }
    return OkStatus();
  }

  // The hosts of the group a rule names at `key` ("mesh.0.group").
  Result<const std::vector<size_t>*> GroupAt(const std::string& key, const std::string& name) const {
    auto it = group_by_name_.find(name);
    if (it != group_by_name_.end()) return &list_.groups[it->second].second;
    if (list_.groups.empty()) {
      return ErrorAt(key, fmt::format("no group {} (the list defines no groups)", Quote(name)));
    }
    return ErrorAt(key, fmt::format("no group {} (groups: {})", Quote(name),
                                    ListNames(list_.groups, [](const auto& g) { return g.first; })));
  }

  Status ResolveRules() {
    for (PendingRule& pending : pending_) {
      PinglistRule rule;
      if (pending.is_mesh) {
        WHARF_ASSIGN_OR_RETURN(const std::vector<size_t>* group,
                               GroupAt(pending.key + ".group", pending.from));
        rule.origin = fmt::format("{} (group {})", pending.key, pending.from);
        rule.from = *group;
        rule.to = *group;
      } else {
        WHARF_ASSIGN_OR_RETURN(const std::vector<size_t>* from,
                               GroupAt(pending.key + ".from", pending.from));
        WHARF_ASSIGN_OR_RETURN(const std::vector<size_t>* to,
                               GroupAt(pending.key + ".to", pending.to));
        rule.origin = fmt::format("{} ({} -> {})", pending.key, pending.from, pending.to);
        rule.from = *from;
        rule.to = *to;
      }
      rule.transports = std::move(pending.spec.transports);
      rule.probe = pending.spec.probe;
      list_.rules.push_back(std::move(rule));
    }
    return OkStatus();
  }

  const ConfigDoc& doc_;
  Pinglist list_;
  ClassSpec defaults_;
  uint16_t default_homa_port_ = kDefaultHomaPort;
  uint16_t default_tcp_port_ = kDefaultTcpPort;
  std::vector<std::string> host_key_;  // per host: the key that first gave it
  std::unordered_map<std::string, size_t> host_by_name_;
  std::unordered_map<NetAddress, size_t> host_by_homa_;
  std::unordered_map<NetAddress, size_t> host_by_tcp_;
  std::unordered_map<std::string, size_t> group_by_name_;  // index into list_.groups
  std::vector<PendingRule> pending_;
  Status missing_;  // the first missing required key
};

}  // namespace

std::string_view TransportName(ProbeTransport t) {
  switch (t) {
    case ProbeTransport::kHoma:
      return "homa";
    case ProbeTransport::kTcp:
      return "tcp";
  }
  return "unknown";
}

int ProbeDscp(ProbeTransport /*t*/, uint8_t priority) { return priority * 8; }

Result<Pinglist> ParsePinglist(std::string_view text, std::string source_name) {
  WHARF_ASSIGN_OR_RETURN(ConfigDoc doc, ConfigDoc::Parse(text, source_name));
  return PinglistReader(doc, std::move(source_name)).Read(text);
}

Result<Pinglist> LoadPinglist(const std::string& path) {
  // As ConfigDoc::LoadFile reads, keeping the bytes: the default version is
  // their hash.
  WHARF_ASSIGN_OR_RETURN(std::string text, ConfigDoc::ReadFile(path, "pinglist"));
  return ParsePinglist(text, path);
}

Result<size_t> FindSelf(const Pinglist& list, std::string_view self_name,
                        std::span<const NetAddress> local_addresses, uint16_t homa_port,
                        uint16_t tcp_port) {
  const auto host_names = [&] {
    if (list.hosts.empty()) return std::string("none");
    return ListNames(list.hosts, [](const PinglistHost& h) { return h.name; });
  };
  if (!self_name.empty()) {
    for (size_t i = 0; i < list.hosts.size(); ++i) {
      if (list.hosts[i].name == self_name) return i;
    }
    return NotFoundError(fmt::format("{}: no host named {} (hosts: {})", list.source,
                                     Quote(self_name), host_names()));
  }
  const bool by_homa = homa_port != 0;
  if (!by_homa && tcp_port == 0) {
    return NotFoundError(fmt::format(
        "{}: this daemon listens on neither homa nor tcp, so no host's address and port can be "
        "its own; give its name",
        list.source));
  }
  const std::string looked_for = fmt::format(
      "one of this daemon's addresses ({}) with {} {}",
      local_addresses.empty()
          ? std::string("none")
          : ListNames(local_addresses, [](const NetAddress& a) { return IpText(a); }),
      by_homa ? "homa_port" : "tcp_port", by_homa ? homa_port : tcp_port);
  std::vector<size_t> matches;
  for (size_t i = 0; i < list.hosts.size(); ++i) {
    const NetAddress& address = by_homa ? list.hosts[i].homa : list.hosts[i].tcp;
    if (address.port() != (by_homa ? homa_port : tcp_port)) continue;
    const bool local = std::any_of(
        local_addresses.begin(), local_addresses.end(), [&](const NetAddress& a) {
          return a.family() == address.family() && a.ip_bytes() == address.ip_bytes();
        });
    if (local) matches.push_back(i);
  }
  if (matches.empty()) {
    return NotFoundError(fmt::format("{}: no host has {} (hosts: {}); give the daemon's name",
                                     list.source, looked_for, host_names()));
  }
  if (matches.size() > 1) {
    return InvalidArgumentError(fmt::format(
        "{}: {} hosts have {}: {}; give the daemon's name to choose", list.source, matches.size(),
        looked_for, ListNames(matches, [&](size_t i) { return "'" + list.hosts[i].name + "'"; })));
  }
  return matches.front();
}

Result<std::vector<ProbeTarget>> TargetsOf(const Pinglist& list, size_t self, size_t max_targets) {
  const size_t n = list.hosts.size();
  if (self >= n) {
    return InvalidArgumentError(
        fmt::format("{}: no host {} (the list has {})", list.source, self, n));
  }
  constexpr size_t kTransports = 2;
  // Per (host, transport), host-major: the rules that name it, in rule
  // order, and the last rule that did (a hand-built rule may name a host
  // twice). Past max_targets only the count goes on.
  constexpr uint32_t kNoRule = UINT32_MAX;
  std::vector<std::vector<uint32_t>> named_by(n * kTransports);
  std::vector<uint32_t> last_rule(n * kTransports, kNoRule);
  size_t count = 0;
  for (size_t r = 0; r < list.rules.size(); ++r) {
    const PinglistRule& rule = list.rules[r];
    if (std::find(rule.from.begin(), rule.from.end(), self) == rule.from.end()) continue;
    for (const size_t host : rule.to) {
      if (host >= n) {
        return InvalidArgumentError(fmt::format("{}: {} names host {}, but the list has {}",
                                                list.source, rule.origin, host, n));
      }
      if (host == self) continue;
      for (const ProbeTransport t : rule.transports) {
        const size_t slot = host * kTransports + static_cast<size_t>(t);
        if (static_cast<size_t>(t) >= kTransports || last_rule[slot] == r) continue;
        if (last_rule[slot] == kNoRule) ++count;
        last_rule[slot] = static_cast<uint32_t>(r);
        if (count <= max_targets) named_by[slot].push_back(static_cast<uint32_t>(r));
      }
    }
  }
  if (count > max_targets) {
    return InvalidArgumentError(fmt::format(
        "{}: host '{}' would probe {} targets (hosts x transports), more than the {} allowed; "
        "give it fewer groups or transports",
        list.source, list.hosts[self].name, count, max_targets));
  }
  std::vector<ProbeTarget> targets;
  targets.reserve(count);
  for (size_t slot = 0; slot < named_by.size(); ++slot) {
    const std::vector<uint32_t>& rules = named_by[slot];
    if (rules.empty()) continue;
    uint32_t best = rules.front();
    std::string origin;
    for (const uint32_t r : rules) {
      if (list.rules[r].probe.interval < list.rules[best].probe.interval) best = r;
      if (!origin.empty()) origin += ", ";
      origin += list.rules[r].origin;
    }
    targets.push_back(ProbeTarget{.host = slot / kTransports,
                                  .transport = static_cast<ProbeTransport>(slot % kTransports),
                                  .probe = list.rules[best].probe,
                                  .origin = std::move(origin)});
  }
  return targets;
}

}  // namespace wharf::mesh
