// mesh/pinglist.h: the pinglist, the file that says which wharf daemons
// probe which, over which transports and how often (wharfd.yaml's
// mesh.pinglist names it); how it is parsed and checked, and how one
// daemon finds itself in it and the targets it probes. It does not probe,
// schedule or keep statistics: that is the Prober's (mesh/prober.h).
//
// The format, complete (every key but the groups' hosts is optional):
//
//   version: "2026-11-29a"   # shown with the results; default "fnv1a64:<16 hex
//                            # digits>", the hash of the file's bytes
//   defaults:                # the probe class of every rule that does not say
//     transports: [homa]     # any of homa, tcp
//     interval: 1s           # one probe per target and transport per interval,
//                            # 100us to 3600s
//     timeout: 1s            # a probe unanswered this long is lost, 100us to 60s
//     priority: 7            # 0 to 7
//     size: 64               # probe bytes, 32 to 65536 (64, 1KiB, ...)
//     homa_port: 4000        # where each host's wharfd listens (its listen.homa
//     tcp_port: 4001         # and listen.tcp), unless the host says otherwise
//   groups:                  # named lists of hosts
//     rack-a:
//       - 198.18.0.1         # short form: the name is the address
//       - {name: db1, address: 198.18.0.2, homa_port: 4100, tcp_port: 4101}
//     rack-b: [198.18.1.1, "[fd00::1]"]   # IPv6 in brackets or bare
//   mesh:                    # each host of the group probes every other one
//     - group: rack-a
//       transports: [homa, tcp]   # transports, interval, timeout, priority
//       interval: 500ms           # and size may be set per rule
//   arrows:                  # each host of `from` probes each host of `to`
//     - from: rack-a
//       to: rack-b
//       priority: 2
//
// Addresses are numeric IPv4 or IPv6 (no DNS, no port: ports are homa_port
// and tcp_port). A short-form host is named by its address as written
// canonically ("fd00::1", not "[fd00::1]"). One host (one name) may be in
// several groups, but a name given twice must have the same address and
// ports each time, and two names may not share an address and port. No
// host probes itself. A list without mesh and arrows is valid and probes
// nothing. "ucx" is refused: ucx:// is not built yet.
//
// Errors name the file, the line and the key, as ConfigDoc's do:
//   pinglist.yaml:14: arrows.0.to: no group 'rack-c' (groups: rack-a, rack-b)
//   pinglist.yaml:7: groups.rack-a.1.address: expected a numeric IPv4 or IPv6
//     address, got 'db.example'
// and a misspelt key is an error with a suggestion ("unknown key
// 'arrows.0.form' (did you mean 'arrows.0.from'?)").
//
// Everything here is a pure function of its arguments (LoadPinglist also
// reads one file): any thread may call it; a Pinglist is a plain value.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/clock.h"
#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::mesh {

// Bounds on a pinglist, so that a wrong or hostile file costs bounded memory
// and time (a rule's from and to are copies of a group's hosts: at most
// kMaxPinglistRules x 2 x kMaxPinglistHosts indices).
inline constexpr size_t kMaxPinglistHosts = 4096;
inline constexpr size_t kMaxPinglistGroups = 256;
inline constexpr size_t kMaxPinglistRules = 1024;  // mesh and arrows together
// Targets (host x transport) one daemon may probe: TargetsOf's default cap.
inline constexpr size_t kMaxTargetsPerHost = 1024;

// Bounds on a probe class's values. 100 us: 10,000 probes a second to one
// target, the most a daemon sends in all by default.
inline constexpr DurationNs kMinProbeInterval = 100 * kNsPerUs;
inline constexpr DurationNs kMaxProbeInterval = 3600 * kNsPerSec;
inline constexpr DurationNs kMinProbeTimeout = 100 * kNsPerUs;
inline constexpr DurationNs kMaxProbeTimeout = 60 * kNsPerSec;
inline constexpr uint8_t kMaxProbePriority = 7;
inline constexpr uint32_t kMinProbeBytes = 32;
inline constexpr uint32_t kMaxProbeBytes = 65536;

enum class ProbeTransport : uint8_t { kHoma, kTcp };

// "homa", "tcp": the names the file uses.
std::string_view TransportName(ProbeTransport t);

// The DSCP a probe of class priority `priority` carries over `t`: the
// class selector of its priority (CS0-CS7, priority x 8). homa:// marks
// each message's packets; tcp:// marks the connection to the peer (one
// stream per peer: the probes' class holds for all of it).
int ProbeDscp(ProbeTransport t, uint8_t priority);

// How a target is probed.
struct ProbeClass {
  DurationNs interval = kNsPerSec;  // between two probes of one target
  DurationNs timeout = kNsPerSec;   // unanswered after this: lost
  // 0..7: the probes' and their answers' priority (homa:// marks it as
  // DSCP CS0-CS7; transport::MessagePriority).
  uint8_t priority = 7;
  uint32_t size_bytes = 64;         // probe message bytes

  friend bool operator==(const ProbeClass&, const ProbeClass&) = default;
};

// One daemon of the list. homa and tcp hold the same IP, each with the
// port of that listener.
struct PinglistHost {
  std::string name;
  transport::NetAddress homa;
  transport::NetAddress tcp;
};

// One entry of mesh or arrows: each host of `from` probes each host of `to`
// but itself, over each of `transports`.
struct PinglistRule {
  // Where it came from, for messages and results:
  // "mesh.0 (group rack-a)" or "arrows.1 (rack-a -> rack-b)".
  std::string origin;
  std::vector<size_t> from, to;  // indices into Pinglist::hosts, group order
  std::vector<ProbeTransport> transports;  // distinct, in enum order
  ProbeClass probe;
};

struct Pinglist {
  std::string source;   // the file name messages start with
  std::string version;  // as given, or "fnv1a64:<16 lowercase hex digits>"
  std::vector<PinglistHost> hosts;  // distinct names, in order of first mention
  // Each group's name and hosts (indices into hosts), in file order.
  std::vector<std::pair<std::string, std::vector<size_t>>> groups;
  std::vector<PinglistRule> rules;  // mesh entries, then arrows, in file order
};

// One (host, transport) a daemon probes.
struct ProbeTarget {
  size_t host;  // index into Pinglist::hosts
  ProbeTransport transport;
  ProbeClass probe;
  // The rules that name it, ", "-separated: "mesh.0 (group rack-a),
  // arrows.1 (rack-a -> rack-b)".
  std::string origin;
};

// Parses and checks a pinglist; `source_name` (usually the path) starts
// every message. Errors are kInvalidArgument (kResourceExhausted if memory
// runs out), "<source>:<line>: <key>: <what is wrong>".
Result<Pinglist> ParsePinglist(std::string_view text, std::string source_name);

// Reads `path` (a regular file of at most ConfigDoc::kMaxFileBytes, as
// ConfigDoc::LoadFile reads) and parses it, named by its path. A missing
// file is kNotFound.
Result<Pinglist> LoadPinglist(const std::string& path);

// Which host of the list this daemon is. By name when `self_name` is not
// empty; else the one host whose IP is one of `local_addresses` (their
// ports are ignored) and whose homa port is `homa_port`, or, when the
// daemon has no Homa listener (homa_port 0), whose tcp port is `tcp_port`.
// kNotFound when no host matches, kInvalidArgument when several do; both
// messages say what was looked for.
Result<size_t> FindSelf(const Pinglist& list, std::string_view self_name,
                        std::span<const transport::NetAddress> local_addresses,
                        uint16_t homa_port, uint16_t tcp_port);

// The targets host `self` probes, ordered by host index, then transport. A
// (host, transport) that several rules name is probed once, with the
// smallest interval among them and the rest of that rule's class (the first
// such rule on a tie); its origin lists every rule. More than `max_targets`
// targets is kInvalidArgument naming the host and the count.
Result<std::vector<ProbeTarget>> TargetsOf(const Pinglist& list, size_t self,
                                           size_t max_targets = kMaxTargetsPerHost);

}  // namespace wharf::mesh
