// The pinglist: the documented example end to end, each error with its
// exact "<file>:<line>: <key>: ..." text, defaults and overrides, the
// bounds, FindSelf's three answers, and TargetsOf's merging and cap.
#include "mesh/pinglist.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <fstream>
#include <string>
#include <vector>

namespace wharf::mesh {
namespace {

using transport::NetAddress;

// The example of pinglist.h, line for line (line 1 is "version").
constexpr std::string_view kExample = R"(version: "2026-11-29a"
defaults:
  transports: [homa]
  interval: 1s
  timeout: 1s
  priority: 7
  size: 64
  homa_port: 4000
  tcp_port: 4001
groups:
  rack-a:
    - 198.18.0.1
    - {name: db1, address: 198.18.0.2, homa_port: 4100, tcp_port: 4101}
  rack-b: [198.18.1.1, "[fd00::1]"]
mesh:
  - group: rack-a
    transports: [homa, tcp]
    interval: 500ms
arrows:
  - from: rack-a
    to: rack-b
    priority: 2
)";

NetAddress V4(std::string_view ip_port) { return NetAddress::Parse(ip_port).value(); }

Pinglist MustParse(std::string_view text) {
  Result<Pinglist> list = ParsePinglist(text, "pinglist.yaml");
  EXPECT_TRUE(list.ok()) << list.status();
  return list.ok() ? std::move(list).value() : Pinglist();
}

// The message of the error ParsePinglist gives, or "ok".
std::string ErrorOf(std::string_view text) {
  Result<Pinglist> list = ParsePinglist(text, "pinglist.yaml");
  if (list.ok()) return "ok";
  EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument) << list.status();
  return list.status().message();
}

std::vector<std::string> HostNames(const Pinglist& list) {
  std::vector<std::string> names;
  for (const PinglistHost& h : list.hosts) names.push_back(h.name);
  return names;
}

// "db1 homa 500ms/1s p7 64B [mesh.0 (group rack-a)]" per target.
std::vector<std::string> Describe(const Pinglist& list, const std::vector<ProbeTarget>& targets) {
  std::vector<std::string> out;
  for (const ProbeTarget& t : targets) {
    out.push_back(list.hosts[t.host].name + " " + std::string(TransportName(t.transport)) + " " +
                  std::to_string(t.probe.interval / kNsPerMs) + "ms/" +
                  std::to_string(t.probe.timeout / kNsPerMs) + "ms p" +
                  std::to_string(t.probe.priority) + " " + std::to_string(t.probe.size_bytes) +
                  "B [" + t.origin + "]");
  }
  return out;
}

std::vector<std::string> TargetsOfName(const Pinglist& list, std::string_view name) {
  Result<size_t> self = FindSelf(list, name, {}, 0, 0);
  EXPECT_TRUE(self.ok()) << self.status();
  if (!self.ok()) return {};
  Result<std::vector<ProbeTarget>> targets = TargetsOf(list, *self);
  EXPECT_TRUE(targets.ok()) << targets.status();
  return targets.ok() ? Describe(list, *targets) : std::vector<std::string>();
}

// A group "g" of `n` hosts 10.0.x.y, one per line.
std::string GroupOf(size_t n, std::string_view name = "g") {
  std::string text = "  " + std::string(name) + ":\n";
  for (size_t i = 1; i <= n; ++i) {
    text += "    - 10." + std::to_string(i >> 16) + "." + std::to_string((i >> 8) & 255) + "." +
            std::to_string(i & 255) + "\n";
  }
  return text;
}

TEST(PinglistTest, TransportNamesAreTheFilesSpelling) {
  EXPECT_EQ(TransportName(ProbeTransport::kHoma), "homa");
  EXPECT_EQ(TransportName(ProbeTransport::kTcp), "tcp");
}

// --- ParsePinglist: the example, defaults and overrides ---

TEST(PinglistTest, TheFullExampleParsesToItsHostsGroupsAndRules) {
  const Pinglist list = MustParse(kExample);
  EXPECT_EQ(list.source, "pinglist.yaml");
  EXPECT_EQ(list.version, "2026-11-29a");
  ASSERT_EQ(list.hosts.size(), 4u);
  EXPECT_EQ(HostNames(list), (std::vector<std::string>{"198.18.0.1", "db1", "198.18.1.1", "fd00::1"}));
  EXPECT_EQ(list.hosts[0].homa, V4("198.18.0.1:4000"));
  EXPECT_EQ(list.hosts[0].tcp, V4("198.18.0.1:4001"));
  EXPECT_EQ(list.hosts[1].homa, V4("198.18.0.2:4100"));
  EXPECT_EQ(list.hosts[1].tcp, V4("198.18.0.2:4101"));
  EXPECT_EQ(list.hosts[3].homa, NetAddress::Parse("[fd00::1]:4000").value());
  EXPECT_EQ(list.hosts[3].tcp, NetAddress::Parse("[fd00::1]:4001").value());
  ASSERT_EQ(list.groups.size(), 2u);
  EXPECT_EQ(list.groups[0], (std::pair<std::string, std::vector<size_t>>{"rack-a", {0, 1}}));
  EXPECT_EQ(list.groups[1], (std::pair<std::string, std::vector<size_t>>{"rack-b", {2, 3}}));
  ASSERT_EQ(list.rules.size(), 2u);
  EXPECT_EQ(list.rules[0].origin, "mesh.0 (group rack-a)");
  EXPECT_EQ(list.rules[0].from, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(list.rules[0].to, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(list.rules[0].transports,
            (std::vector<ProbeTransport>{ProbeTransport::kHoma, ProbeTransport::kTcp}));
  EXPECT_EQ(list.rules[0].probe, (ProbeClass{.interval = 500 * kNsPerMs}));
  EXPECT_EQ(list.rules[1].origin, "arrows.0 (rack-a -> rack-b)");
  EXPECT_EQ(list.rules[1].from, (std::vector<size_t>{0, 1}));
  EXPECT_EQ(list.rules[1].to, (std::vector<size_t>{2, 3}));
  EXPECT_EQ(list.rules[1].transports, (std::vector<ProbeTransport>{ProbeTransport::kHoma}));
  EXPECT_EQ(list.rules[1].probe, (ProbeClass{.priority = 2}));

  EXPECT_EQ(TargetsOfName(list, "198.18.0.1"),
            (std::vector<std::string>{
                "db1 homa 500ms/1000ms p7 64B [mesh.0 (group rack-a)]",
                "db1 tcp 500ms/1000ms p7 64B [mesh.0 (group rack-a)]",
                "198.18.1.1 homa 1000ms/1000ms p2 64B [arrows.0 (rack-a -> rack-b)]",
                "fd00::1 homa 1000ms/1000ms p2 64B [arrows.0 (rack-a -> rack-b)]",
            }));
  EXPECT_EQ(TargetsOfName(list, "db1"),
            (std::vector<std::string>{
                "198.18.0.1 homa 500ms/1000ms p7 64B [mesh.0 (group rack-a)]",
                "198.18.0.1 tcp 500ms/1000ms p7 64B [mesh.0 (group rack-a)]",
                "198.18.1.1 homa 1000ms/1000ms p2 64B [arrows.0 (rack-a -> rack-b)]",
                "fd00::1 homa 1000ms/1000ms p2 64B [arrows.0 (rack-a -> rack-b)]",
            }));
  // rack-b is only probed.
  EXPECT_EQ(TargetsOfName(list, "198.18.1.1"), std::vector<std::string>());
  EXPECT_EQ(TargetsOfName(list, "fd00::1"), std::vector<std::string>());
}

TEST(PinglistTest, AnEmptyPinglistIsValidAndProbesNothing) {
  for (std::string_view text : {"", "# nothing yet\n", "groups:\n  rack-a: [198.18.0.1]\n",
                                "groups: {}\nmesh: []\narrows: []\n"}) {
    const Pinglist list = MustParse(text);
    EXPECT_TRUE(list.rules.empty()) << text;
    for (size_t i = 0; i < list.hosts.size(); ++i) {
      Result<std::vector<ProbeTarget>> targets = TargetsOf(list, i);
      ASSERT_TRUE(targets.ok()) << targets.status();
      EXPECT_TRUE(targets->empty());
    }
  }
}

TEST(PinglistTest, WithoutAVersionTheVersionIsTheHashOfTheFilesBytes) {
  // FNV-1a 64 of no bytes is its offset basis; the other value is Python's.
  EXPECT_EQ(MustParse("").version, "fnv1a64:cbf29ce484222325");
  EXPECT_EQ(MustParse("groups: {}\n").version, "fnv1a64:a70933861ff27d9b");
  EXPECT_EQ(MustParse("#a").version, MustParse("#a").version);
  EXPECT_NE(MustParse("groups:\n").version, MustParse("groups: \n").version);
  EXPECT_EQ(MustParse("#a").version.size(), std::string("fnv1a64:").size() + 16);
  EXPECT_EQ(MustParse("version: 3").version, "3");
}

TEST(PinglistTest, AVersionIsShortPrintableText) {
  EXPECT_EQ(ErrorOf("version: \"\"\n"),
            "pinglist.yaml:1: version: expected printable ASCII text of 1 to 128 characters, got "
            "''");
  EXPECT_EQ(ErrorOf("version: \"a\\tb\"\n"),
            "pinglist.yaml:1: version: expected printable ASCII text of 1 to 128 characters, got "
            "'a\\x09b'");
  EXPECT_NE(ErrorOf("version: " + std::string(129, 'v')), "ok");
  EXPECT_EQ(ErrorOf("version: " + std::string(128, 'v')), "ok");
}

TEST(PinglistTest, WithoutDefaultsRulesProbeOverHomaOncePerSecondAtPorts4000And4001) {
  const Pinglist list = MustParse("groups: {g: [198.18.0.1, 198.18.0.2]}\nmesh: [{group: g}]\n");
  EXPECT_EQ(list.hosts[0].homa, V4("198.18.0.1:4000"));
  EXPECT_EQ(list.hosts[0].tcp, V4("198.18.0.1:4001"));
  ASSERT_EQ(list.rules.size(), 1u);
  EXPECT_EQ(list.rules[0].transports, (std::vector<ProbeTransport>{ProbeTransport::kHoma}));
  EXPECT_EQ(list.rules[0].probe, ProbeClass());
  EXPECT_EQ(list.rules[0].probe,
            (ProbeClass{.interval = kNsPerSec, .timeout = kNsPerSec, .priority = 7, .size_bytes = 64}));
}

TEST(PinglistTest, DefaultsSetEveryRuleAndEachRuleMayOverrideAnyOfThem) {
  const Pinglist list = MustParse(R"(defaults:
  transports: [tcp]
  interval: 2s
  timeout: 300ms
  priority: 3
  size: 1KiB
  homa_port: 5000
  tcp_port: 5001
groups:
  g: [198.18.0.1, {address: 198.18.0.2, tcp_port: 6001}]
mesh:
  - group: g
  - group: g
    transports: [tcp, homa]
    interval: 10ms
    timeout: 100us
    priority: 0
    size: 65536
arrows:
  - {from: g, to: g, size: 32}
)");
  EXPECT_EQ(list.hosts[0].homa, V4("198.18.0.1:5000"));
  EXPECT_EQ(list.hosts[0].tcp, V4("198.18.0.1:5001"));
  EXPECT_EQ(list.hosts[1].name, "198.18.0.2");
  EXPECT_EQ(list.hosts[1].homa, V4("198.18.0.2:5000"));
  EXPECT_EQ(list.hosts[1].tcp, V4("198.18.0.2:6001"));
  ASSERT_EQ(list.rules.size(), 3u);
  const ProbeClass defaults{
      .interval = 2 * kNsPerSec, .timeout = 300 * kNsPerMs, .priority = 3, .size_bytes = 1024};
  EXPECT_EQ(list.rules[0].transports, (std::vector<ProbeTransport>{ProbeTransport::kTcp}));
  EXPECT_EQ(list.rules[0].probe, defaults);
  // Transports come back in enum order, whatever the file's.
  EXPECT_EQ(list.rules[1].transports,
            (std::vector<ProbeTransport>{ProbeTransport::kHoma, ProbeTransport::kTcp}));
  EXPECT_EQ(list.rules[1].probe, (ProbeClass{.interval = 10 * kNsPerMs,
                                             .timeout = 100 * kNsPerUs,
                                             .priority = 0,
                                             .size_bytes = 65536}));
  EXPECT_EQ(list.rules[2].transports, (std::vector<ProbeTransport>{ProbeTransport::kTcp}));
  ProbeClass small = defaults;
  small.size_bytes = 32;
  EXPECT_EQ(list.rules[2].probe, small);
  EXPECT_EQ(list.rules[2].origin, "arrows.0 (g -> g)");
}

TEST(PinglistTest, AShortFormHostIsNamedByItsAddressWrittenCanonically) {
  const Pinglist list =
      MustParse("groups:\n  a: [\"[fd00::1]\", fd00:0:0::2, \"[FD00::3]\"]\n  b: [fd00:0::1]\n");
  EXPECT_EQ(HostNames(list), (std::vector<std::string>{"fd00::1", "fd00::2", "fd00::3"}));
  EXPECT_EQ(list.groups[1].second, (std::vector<size_t>{0}));
}

TEST(PinglistTest, AHostInSeveralGroupsIsOneHost) {
  const Pinglist list = MustParse(R"(groups:
  a: [198.18.0.1, {name: db1, address: 198.18.0.2, homa_port: 4100}]
  b: [{name: db1, address: 198.18.0.2, homa_port: 4100}, 198.18.0.1, 198.18.0.3]
)");
  EXPECT_EQ(HostNames(list), (std::vector<std::string>{"198.18.0.1", "db1", "198.18.0.3"}));
  EXPECT_EQ(list.groups[1].second, (std::vector<size_t>{1, 0, 2}));
}

TEST(PinglistTest, OneIpWithOtherPortsIsAnotherHost) {
  const Pinglist list = MustParse(R"(groups:
  a:
    - {name: d1, address: 198.18.0.1}
    - {name: d2, address: 198.18.0.1, homa_port: 4100, tcp_port: 4101}
)");
  EXPECT_EQ(HostNames(list), (std::vector<std::string>{"d1", "d2"}));
}

// --- ParsePinglist: errors ---

TEST(PinglistTest, AnArrowToAnUnknownGroupNamesLineAndKey) {
  EXPECT_EQ(ErrorOf(R"(groups:
  rack-a: [198.18.0.1]
  rack-b: [198.18.1.1]
arrows:
  - from: rack-a
    to: rack-c
)"),
            "pinglist.yaml:6: arrows.0.to: no group 'rack-c' (groups: rack-a, rack-b)");
  EXPECT_EQ(ErrorOf("groups: {rack-a: []}\narrows:\n  - {from: rack, to: rack-a}\n"),
            "pinglist.yaml:3: arrows.0.from: no group 'rack' (groups: rack-a)");
}

TEST(PinglistTest, AMeshOfAnUnknownGroupNamesLineAndKey) {
  EXPECT_EQ(ErrorOf("mesh:\n  - group: rack-a\n"),
            "pinglist.yaml:2: mesh.0.group: no group 'rack-a' (the list defines no groups)");
}

TEST(PinglistTest, ManyGroupNamesAreListedUpToSixteen) {
  std::string text = "groups:\n";
  for (int i = 0; i < 20; ++i) text += "  g" + std::to_string(i) + ": []\n";
  text += "mesh: [{group: x}]\n";
  EXPECT_EQ(ErrorOf(text),
            "pinglist.yaml:22: mesh.0.group: no group 'x' (groups: g0, g1, g2, g3, g4, g5, g6, g7, "
            "g8, g9, g10, g11, g12, g13, g14, g15, ... (20 in all))");
}

TEST(PinglistTest, ANonNumericAddressNamesLineAndKey) {
  EXPECT_EQ(ErrorOf(R"(groups:
  rack-a:
    - 198.18.0.1
    - {name: db1, address: db.example}
)"),
            "pinglist.yaml:4: groups.rack-a.1.address: expected a numeric IPv4 or IPv6 address, "
            "got 'db.example'");
  EXPECT_EQ(ErrorOf("groups:\n  rack-a: [198.18.0.1, localhost]\n"),
            "pinglist.yaml:2: groups.rack-a.1: expected a numeric IPv4 or IPv6 address, got "
            "'localhost'");
  for (std::string_view bad : {"198.18.0", "198.18.0.256", "[198.18.0.1]", "fd00:::1", "1.2.3.4.5",
                               "[fd00::1", "fe80::1%eth0", "::g"}) {
    EXPECT_EQ(ErrorOf("groups: {a: [\"" + std::string(bad) + "\"]}\n"),
              "pinglist.yaml:1: groups.a.0: expected a numeric IPv4 or IPv6 address, got '" +
                  std::string(bad) + "'");
  }
}

TEST(PinglistTest, AnAddressWithAPortSaysWherePortsGo) {
  EXPECT_EQ(ErrorOf("groups: {a: [\"198.18.0.1:4000\"]}\n"),
            "pinglist.yaml:1: groups.a.0: expected a numeric IPv4 or IPv6 address, got "
            "'198.18.0.1:4000' (give ports as homa_port and tcp_port)");
  EXPECT_EQ(ErrorOf("groups: {a: [\"[fd00::1]:4000\"]}\n"),
            "pinglist.yaml:1: groups.a.0: expected a numeric IPv4 or IPv6 address, got "
            "'[fd00::1]:4000' (give ports as homa_port and tcp_port)");
}

TEST(PinglistTest, TheAnyAddressIsNotAHost) {
  EXPECT_EQ(ErrorOf("groups: {a: [0.0.0.0]}\n"),
            "pinglist.yaml:1: groups.a.0: expected a numeric IPv4 or IPv6 address, got '0.0.0.0' "
            "(the any-address: give the host's own)");
  EXPECT_EQ(ErrorOf("groups: {a: [{address: \"::\"}]}\n"),
            "pinglist.yaml:1: groups.a.0.address: expected a numeric IPv4 or IPv6 address, got "
            "'::' (the any-address: give the host's own)");
}

TEST(PinglistTest, UcxIsRefusedAsNotBuiltYet) {
  EXPECT_EQ(ErrorOf("defaults:\n  transports: [homa, ucx]\n"),
            "pinglist.yaml:2: defaults.transports.1: ucx:// is not built yet (transports: homa, "
            "tcp)");
  EXPECT_EQ(ErrorOf("groups: {g: []}\nmesh:\n  - group: g\n    transports:\n      - ucx\n"),
            "pinglist.yaml:5: mesh.0.transports.0: ucx:// is not built yet (transports: homa, "
            "tcp)");
}

TEST(PinglistTest, TransportsAreOneOrBothOfHomaAndTcp) {
  EXPECT_EQ(ErrorOf("defaults:\n  transports: [homa, udp]\n"),
            "pinglist.yaml:2: defaults.transports.1: expected homa or tcp, got 'udp'");
  EXPECT_EQ(ErrorOf("defaults:\n  transports: [tcp, tcp]\n"),
            "pinglist.yaml:2: defaults.transports.1: 'tcp' is listed twice");
  EXPECT_EQ(ErrorOf("defaults:\n  transports: []\n"),
            "pinglist.yaml:2: defaults.transports: expected at least one of homa, tcp, got an "
            "empty list");
  EXPECT_EQ(ErrorOf("defaults:\n  transports: homa\n"),
            "pinglist.yaml:2: defaults.transports: expected a list of strings, got 'homa'");
}

TEST(PinglistTest, IntervalIsFrom100usTo3600s) {
  EXPECT_EQ(ErrorOf("defaults:\n  interval: 99us\n"),
            "pinglist.yaml:2: defaults.interval: expected 100us to 3600s, got 99us");
  EXPECT_EQ(ErrorOf("defaults:\n  interval: 0\n"),
            "pinglist.yaml:2: defaults.interval: expected 100us to 3600s, got 0s");
  EXPECT_EQ(ErrorOf("groups: {g: []}\nmesh:\n  - {group: g, interval: 3601s}\n"),
            "pinglist.yaml:3: mesh.0.interval: expected 100us to 3600s, got 3601s");
  EXPECT_EQ(ErrorOf("defaults: {interval: 100us}\n"), "ok");
  EXPECT_EQ(ErrorOf("defaults: {interval: 3600s}\n"), "ok");
  EXPECT_EQ(ErrorOf("defaults:\n  interval: fast\n"),
            "pinglist.yaml:2: defaults.interval: expected a duration like '5ms' (units: ns, us, "
            "ms, s), got 'fast'");
}

TEST(PinglistTest, TimeoutIsFrom100usTo60s) {
  EXPECT_EQ(ErrorOf("defaults:\n  timeout: 99us\n"),
            "pinglist.yaml:2: defaults.timeout: expected 100us to 60s, got 99us");
  EXPECT_EQ(ErrorOf("groups: {g: []}\narrows:\n  - {from: g, to: g, timeout: 60001ms}\n"),
            "pinglist.yaml:3: arrows.0.timeout: expected 100us to 60s, got 60001ms");
  // The timeout need not be shorter than the interval.
  EXPECT_EQ(ErrorOf("defaults: {timeout: 60s, interval: 1ms}\n"), "ok");
}

TEST(PinglistTest, PriorityIsFrom0To7) {
  EXPECT_EQ(ErrorOf("defaults:\n  priority: 8\n"),
            "pinglist.yaml:2: defaults.priority: expected a priority from 0 to 7, got 8");
  EXPECT_EQ(ErrorOf("defaults:\n  priority: -1\n"),
            "pinglist.yaml:2: defaults.priority: expected a non-negative integer, got '-1'");
  EXPECT_EQ(ErrorOf("defaults: {priority: 0}\n"), "ok");
}

TEST(PinglistTest, SizeIsFrom32To65536Bytes) {
  EXPECT_EQ(ErrorOf("defaults:\n  size: 31\n"),
            "pinglist.yaml:2: defaults.size: expected 32 to 65536 bytes, got 31");
  EXPECT_EQ(ErrorOf("defaults:\n  size: 65537\n"),
            "pinglist.yaml:2: defaults.size: expected 32 to 65536 bytes, got 65537");
  EXPECT_EQ(ErrorOf("defaults: {size: 64KiB}\n"), "ok");
}

TEST(PinglistTest, PortsAreFrom1To65535) {
  EXPECT_EQ(ErrorOf("defaults:\n  homa_port: 0\n"),
            "pinglist.yaml:2: defaults.homa_port: expected a port from 1 to 65535, got 0");
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    - {address: 198.18.0.1, tcp_port: 65536}\n"),
            "pinglist.yaml:3: groups.a.0.tcp_port: expected a port from 1 to 65535, got 65536");
}

TEST(PinglistTest, PortsMayNotBeSetPerRule) {
  EXPECT_EQ(ErrorOf("groups: {g: []}\nmesh:\n  - group: g\n    homa_port: 4100\n"),
            "pinglist.yaml:4: unknown key 'mesh.0.homa_port' (did you mean "
            "'defaults.homa_port'?)");
}

TEST(PinglistTest, ANameGivenTwiceWithAnotherAddressOrPortIsRefused) {
  EXPECT_EQ(ErrorOf(R"(groups:
  rack-a:
    - {name: db1, address: 198.18.0.2, homa_port: 4100}
  rack-b:
    - {name: db1, address: 198.18.0.9}
)"),
            "pinglist.yaml:5: groups.rack-b.0: host 'db1' is already 198.18.0.2 with homa_port "
            "4100 and tcp_port 4001 (groups.rack-a.0, line 3), not 198.18.0.9 with homa_port 4000 "
            "and tcp_port 4001");
  // A short form names the host by its address, with the default ports.
  EXPECT_EQ(ErrorOf(R"(groups:
  a: [{address: 198.18.0.2, homa_port: 4100}]
  b: [198.18.0.2]
)"),
            "pinglist.yaml:3: groups.b.0: host '198.18.0.2' is already 198.18.0.2 with homa_port "
            "4100 and tcp_port 4001 (groups.a.0, line 2), not 198.18.0.2 with homa_port 4000 and "
            "tcp_port 4001");
}

TEST(PinglistTest, TwoNamesForOneAddressAndPortAreRefused) {
  EXPECT_EQ(ErrorOf(R"(groups:
  a:
    - 198.18.0.2
    - {name: db1, address: 198.18.0.2, tcp_port: 4101}
)"),
            "pinglist.yaml:4: groups.a.1: 198.18.0.2 with homa_port 4000 is already host "
            "'198.18.0.2' (groups.a.0, line 3); one daemon, one name");
  EXPECT_EQ(ErrorOf(R"(groups:
  a:
    - {name: x, address: 198.18.0.2, homa_port: 4100}
    - {name: y, address: 198.18.0.2}
)"),
            "pinglist.yaml:4: groups.a.1: 198.18.0.2 with tcp_port 4001 is already host 'x' "
            "(groups.a.0, line 3); one daemon, one name");
}

TEST(PinglistTest, AHostListedTwiceInOneGroupIsRefused) {
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    - 198.18.0.1\n    - 198.18.0.2\n    - 198.18.0.1\n"),
            "pinglist.yaml:5: groups.a.2: host '198.18.0.1' is already in group a (groups.a.0, "
            "line 3)");
}

TEST(PinglistTest, HostAndGroupNamesAreShortAndPlain) {
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    - {name: db 1, address: 198.18.0.1}\n"),
            "pinglist.yaml:3: groups.a.0.name: expected a name of letters, digits, '-', '_', '.' "
            "and ':' (at most 64), got 'db 1'");
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    - {name: \"\", address: 198.18.0.1}\n"),
            "pinglist.yaml:3: groups.a.0.name: expected a name of letters, digits, '-', '_', '.' "
            "and ':' (at most 64), got ''");
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    - {name: " + std::string(64, 'n') +
                    ", address: 198.18.0.1}\n"),
            "ok");
  EXPECT_EQ(ErrorOf("groups:\n  rack a: []\n"),
            "pinglist.yaml:2: groups.rack a: expected a group name of letters, digits, '-' and "
            "'_' (at most 64), got 'rack a'");
}

TEST(PinglistTest, AMisspeltKeyIsReportedBeforeTheKeyItLeavesMissing) {
  EXPECT_EQ(ErrorOf(R"(groups:
  rack-a: [198.18.0.1]
arrows:
  - form: rack-a
    to: rack-a
)"),
            "pinglist.yaml:4: unknown key 'arrows.0.form' (did you mean 'arrows.0.from'?)");
  EXPECT_EQ(ErrorOf("grups:\n  a: []\nmesh: [{group: a}]\n"),
            "pinglist.yaml:1: unknown key 'grups' (did you mean 'groups'?)");
  EXPECT_EQ(ErrorOf("defaults:\n  intreval: 1s\n"),
            "pinglist.yaml:2: unknown key 'defaults.intreval' (did you mean 'defaults.interval'?)");
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    - {adress: 198.18.0.1}\n"),
            "pinglist.yaml:3: unknown key 'groups.a.0.adress' (did you mean "
            "'groups.a.0.address'?)");
}

TEST(PinglistTest, AMissingRequiredKeyNamesItsItem) {
  EXPECT_EQ(ErrorOf("groups: {g: []}\nmesh:\n  - interval: 1s\n"),
            "pinglist.yaml:3: mesh.0: missing key 'group' (the group whose hosts probe each "
            "other)");
  EXPECT_EQ(ErrorOf("groups: {g: []}\narrows:\n  - from: g\n"),
            "pinglist.yaml:3: arrows.0: missing key 'to' (the group whose hosts are probed)");
  EXPECT_EQ(ErrorOf("groups: {g: []}\narrows:\n  - {to: g}\n"),
            "pinglist.yaml:3: arrows.0: missing key 'from' (the group whose hosts probe)");
  EXPECT_EQ(ErrorOf("groups:\n  g:\n    - {name: db1}\n"),
            "pinglist.yaml:3: groups.g.0: missing key 'address' (every host needs one: {name: "
            "db1, address: 198.18.0.2})");
}

TEST(PinglistTest, EachSectionMustHaveItsShape) {
  EXPECT_EQ(ErrorOf("groups: [198.18.0.1]\n"),
            "pinglist.yaml:1: groups: expected a map from group names to lists of hosts, like "
            "{rack-a: [198.18.0.1]}, got a list");
  EXPECT_EQ(ErrorOf("groups: rack-a\n"),
            "pinglist.yaml:1: groups: expected a map from group names to lists of hosts, like "
            "{rack-a: [198.18.0.1]}, got 'rack-a'");
  EXPECT_EQ(ErrorOf("groups:\n  a: 198.18.0.1\n"),
            "pinglist.yaml:2: groups.a: expected a list of hosts, like [198.18.0.1, {name: db1, "
            "address: 198.18.0.2}], got '198.18.0.1'");
  // The empty item's own line.
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    -\n"),
            "pinglist.yaml:3: groups.a.0: expected a host: an address, or {name: db1, address: "
            "198.18.0.2, homa_port: 4100}, got an empty item");
  EXPECT_EQ(ErrorOf("groups:\n  a:\n    - [198.18.0.1]\n"),
            "pinglist.yaml:3: groups.a.0: expected a host: an address, or {name: db1, address: "
            "198.18.0.2, homa_port: 4100}, got a list");
  EXPECT_EQ(ErrorOf("mesh:\n  group: a\n"),
            "pinglist.yaml:1: mesh: expected a list of rules, like [{group: rack-a}], got a map");
  EXPECT_EQ(ErrorOf("mesh:\n  - rack-a\n"),
            "pinglist.yaml:2: mesh.0: expected a rule like {group: rack-a, interval: 1s}, got "
            "'rack-a'");
  EXPECT_EQ(ErrorOf("arrows: a\n"),
            "pinglist.yaml:1: arrows: expected a list of rules, like [{from: rack-a, to: rack-b}], "
            "got 'a'");
  EXPECT_EQ(ErrorOf("defaults: 1s\n"),
            "pinglist.yaml:1: defaults: expected a map of probe settings, like {interval: 1s}, "
            "got '1s'");
  EXPECT_EQ(ErrorOf("groups: {g: []}\nmesh:\n  - group: [g]\n"),
            "pinglist.yaml:3: mesh.0.group: expected a string, got a list");
}

TEST(PinglistTest, YamlErrorsAreConfigDocs) {
  EXPECT_EQ(ErrorOf("groups: {a: [198.18.0.1}\n"),
            "pinglist.yaml:1:24: YAML syntax error: did not find expected ',' or ']' (while "
            "parsing a flow sequence started at 1:13)");
  EXPECT_EQ(ErrorOf("- a\n"),
            "pinglist.yaml:1: expected a map of settings at the top level, got a list");
}

TEST(PinglistTest, AtMost4096Hosts) {
  EXPECT_EQ(ErrorOf("groups:\n" + GroupOf(kMaxPinglistHosts)), "ok");
  EXPECT_EQ(ErrorOf("groups:\n" + GroupOf(kMaxPinglistHosts + 1)),
            "pinglist.yaml:4099: groups.g.4096: more than 4096 hosts");
  // Hosts in several groups count once.
  EXPECT_EQ(ErrorOf("groups:\n" + GroupOf(kMaxPinglistHosts, "a") +
                    GroupOf(kMaxPinglistHosts, "b")),
            "ok");
}

TEST(PinglistTest, AtMost256Groups) {
  std::string text = "groups:\n";
  for (size_t i = 0; i < kMaxPinglistGroups; ++i) text += "  g" + std::to_string(i) + ": []\n";
  EXPECT_EQ(ErrorOf(text), "ok");
  text += "  one-more: []\n";
  EXPECT_EQ(ErrorOf(text), "pinglist.yaml:258: groups.one-more: more than 256 groups");
}

TEST(PinglistTest, AtMost1024RulesInMeshAndArrowsTogether) {
  std::string text = "groups: {g: [198.18.0.1]}\nmesh:\n";
  for (size_t i = 0; i < kMaxPinglistRules - 1; ++i) text += "  - group: g\n";
  text += "arrows:\n  - {from: g, to: g}\n";
  EXPECT_EQ(ErrorOf(text), "ok");
  text += "  - {from: g, to: g}\n";
  EXPECT_EQ(ErrorOf(text),
            "pinglist.yaml:1028: arrows.1: more than 1024 rules (mesh and arrows together)");
}

// --- LoadPinglist ---

// A file under the test's temporary directory, removed at the end.
class TempFile {
 public:
  explicit TempFile(std::string_view text)
      : path_(testing::TempDir() + "pinglist_test_" + std::to_string(::getpid()) + "_" +
              testing::UnitTest::GetInstance()->current_test_info()->name() + ".yaml") {
    std::ofstream(path_) << text;
  }
  ~TempFile() { std::remove(path_.c_str()); }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

TEST(PinglistTest, LoadPinglistReadsTheFileAndNamesItsPath) {
  TempFile good(kExample);
  Result<Pinglist> list = LoadPinglist(good.path());
  ASSERT_TRUE(list.ok()) << list.status();
  EXPECT_EQ(list->source, good.path());
  EXPECT_EQ(list->hosts.size(), 4u);

  TempFile bad("groups:\n  a: [db.example]\n");
  list = LoadPinglist(bad.path());
  EXPECT_EQ(list.status().message(),
            bad.path() +
                ":2: groups.a.0: expected a numeric IPv4 or IPv6 address, got 'db.example'");
}

TEST(PinglistTest, LoadPinglistHashesTheBytesItRead) {
  TempFile file("groups: {a: [198.18.0.1]}\n");
  Result<Pinglist> loaded = LoadPinglist(file.path());
  ASSERT_TRUE(loaded.ok()) << loaded.status();
  EXPECT_EQ(loaded->version, MustParse("groups: {a: [198.18.0.1]}\n").version);
}

TEST(PinglistTest, LoadPinglistOfAMissingFileIsNotFound) {
  const std::string path = testing::TempDir() + "pinglist_test_no_such_file.yaml";
  Result<Pinglist> list = LoadPinglist(path);
  EXPECT_EQ(list.status().code(), StatusCode::kNotFound);
  EXPECT_NE(list.status().message().find(path), std::string::npos) << list.status();
  list = LoadPinglist(testing::TempDir());
  EXPECT_EQ(list.status().code(), StatusCode::kInvalidArgument) << list.status();
}

// --- FindSelf ---

TEST(PinglistTest, FindSelfByName) {
  const Pinglist list = MustParse(kExample);
  EXPECT_EQ(FindSelf(list, "db1", {}, 4000, 4001).value(), 1u);
  EXPECT_EQ(FindSelf(list, "fd00::1", {}, 0, 0).value(), 3u);
  Result<size_t> absent = FindSelf(list, "db2", {}, 4000, 4001);
  EXPECT_EQ(absent.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(absent.status().message(),
            "pinglist.yaml: no host named 'db2' (hosts: 198.18.0.1, db1, 198.18.1.1, fd00::1)");
}

TEST(PinglistTest, FindSelfByAddressAndHomaPortIgnoresTheAddressesPorts) {
  const Pinglist list = MustParse(kExample);
  const std::vector<NetAddress> local = {V4("127.0.0.1:0"), V4("198.18.0.2:9")};
  EXPECT_EQ(FindSelf(list, "", local, 4100, 0).value(), 1u);
  const std::vector<NetAddress> v6 = {NetAddress::Parse("[fd00::1]:0").value()};
  EXPECT_EQ(FindSelf(list, "", v6, 4000, 4001).value(), 3u);
}

TEST(PinglistTest, FindSelfWithoutAHomaListenerMatchesTheTcpPort) {
  const Pinglist list = MustParse(kExample);
  const std::vector<NetAddress> local = {V4("198.18.0.2:0")};
  EXPECT_EQ(FindSelf(list, "", local, 0, 4101).value(), 1u);
  EXPECT_EQ(FindSelf(list, "", local, 0, 4001).status().code(), StatusCode::kNotFound);
}

TEST(PinglistTest, FindSelfWithoutAMatchSaysWhatItLookedFor) {
  const Pinglist list = MustParse(kExample);
  const std::vector<NetAddress> local = {V4("198.18.0.2:0"), V4("10.0.0.1:0")};
  Result<size_t> self = FindSelf(list, "", local, 4000, 4001);
  EXPECT_EQ(self.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(self.status().message(),
            "pinglist.yaml: no host has one of this daemon's addresses (198.18.0.2, 10.0.0.1) "
            "with homa_port 4000 (hosts: 198.18.0.1, db1, 198.18.1.1, fd00::1); give the daemon's "
            "name");
  self = FindSelf(list, "", {}, 4000, 4001);
  EXPECT_EQ(self.status().message(),
            "pinglist.yaml: no host has one of this daemon's addresses (none) with homa_port 4000 "
            "(hosts: 198.18.0.1, db1, 198.18.1.1, fd00::1); give the daemon's name");
  self = FindSelf(list, "", local, 0, 0);
  EXPECT_EQ(self.status().code(), StatusCode::kNotFound);
  EXPECT_EQ(self.status().message(),
            "pinglist.yaml: this daemon listens on neither homa nor tcp, so no host's address and "
            "port can be its own; give its name");
}

TEST(PinglistTest, FindSelfMatchingSeveralHostsIsAmbiguous) {
  const Pinglist list = MustParse("groups: {a: [198.18.0.1, 198.18.0.2, 198.18.0.3]}\n");
  const std::vector<NetAddress> local = {V4("198.18.0.3:0"), V4("198.18.0.1:0")};
  Result<size_t> self = FindSelf(list, "", local, 4000, 4001);
  EXPECT_EQ(self.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(self.status().message(),
            "pinglist.yaml: 2 hosts have one of this daemon's addresses (198.18.0.3, 198.18.0.1) "
            "with homa_port 4000: '198.18.0.1', '198.18.0.3'; give the daemon's name to choose");
}

// --- TargetsOf ---

TEST(PinglistTest, AHostNeverProbesItself) {
  const Pinglist list = MustParse(R"(groups:
  a: [198.18.0.1, 198.18.0.2]
arrows:
  - {from: a, to: a}
)");
  EXPECT_EQ(TargetsOfName(list, "198.18.0.1"),
            (std::vector<std::string>{"198.18.0.2 homa 1000ms/1000ms p7 64B [arrows.0 (a -> a)]"}));
  const Pinglist alone = MustParse("groups: {a: [198.18.0.1]}\nmesh: [{group: a}]\n");
  EXPECT_EQ(TargetsOfName(alone, "198.18.0.1"), std::vector<std::string>());
}

TEST(PinglistTest, ATargetOfSeveralRulesIsProbedOnceAtTheSmallestInterval) {
  const Pinglist list = MustParse(R"(groups:
  a: [198.18.0.1, 198.18.0.2]
  b: [198.18.0.2, 198.18.0.3]
mesh:
  - {group: a, transports: [homa, tcp], priority: 1}
arrows:
  - {from: a, to: b, interval: 200ms, priority: 5, size: 128}
  - {from: a, to: b, interval: 200ms, priority: 6}
  - {from: a, to: a, interval: 2s, transports: [tcp]}
)");
  EXPECT_EQ(TargetsOfName(list, "198.18.0.1"),
            (std::vector<std::string>{
                "198.18.0.2 homa 200ms/1000ms p5 128B [mesh.0 (group a), arrows.0 (a -> b), "
                "arrows.1 (a -> b)]",
                "198.18.0.2 tcp 1000ms/1000ms p1 64B [mesh.0 (group a), arrows.2 (a -> a)]",
                "198.18.0.3 homa 200ms/1000ms p5 128B [arrows.0 (a -> b), arrows.1 (a -> b)]",
            }));
}

TEST(PinglistTest, TargetsAreOrderedByHostThenTransport) {
  const Pinglist list = MustParse(R"(groups:
  me: [198.18.0.9]
  a: [198.18.0.3, 198.18.0.1]
  b: [198.18.0.2]
arrows:
  - {from: me, to: b, transports: [tcp, homa]}
  - {from: me, to: a, transports: [tcp]}
)");
  EXPECT_EQ(TargetsOfName(list, "198.18.0.9"),
            (std::vector<std::string>{
                "198.18.0.3 tcp 1000ms/1000ms p7 64B [arrows.1 (me -> a)]",
                "198.18.0.1 tcp 1000ms/1000ms p7 64B [arrows.1 (me -> a)]",
                "198.18.0.2 homa 1000ms/1000ms p7 64B [arrows.0 (me -> b)]",
                "198.18.0.2 tcp 1000ms/1000ms p7 64B [arrows.0 (me -> b)]",
            }));
}

TEST(PinglistTest, AtMost1024TargetsPerProbingHost) {
  // 513 hosts over two transports: 512 x 2 targets each.
  const std::string head = "defaults: {transports: [homa, tcp]}\ngroups:\n";
  const Pinglist full = MustParse(head + GroupOf(513) + "mesh: [{group: g}]\n");
  Result<std::vector<ProbeTarget>> targets = TargetsOf(full, 0);
  ASSERT_TRUE(targets.ok()) << targets.status();
  EXPECT_EQ(targets->size(), kMaxTargetsPerHost);

  const Pinglist over = MustParse(head + GroupOf(514) + "mesh: [{group: g}]\n");
  targets = TargetsOf(over, 5);
  EXPECT_EQ(targets.status().code(), StatusCode::kInvalidArgument);
  EXPECT_EQ(targets.status().message(),
            "pinglist.yaml: host '10.0.0.6' would probe 1026 targets (hosts x transports), more "
            "than the 1024 allowed; give it fewer groups or transports");
  // The cap is the caller's to lower.
  targets = TargetsOf(full, 0, 10);
  EXPECT_EQ(targets.status().message(),
            "pinglist.yaml: host '10.0.0.1' would probe 1024 targets (hosts x transports), more "
            "than the 10 allowed; give it fewer groups or transports");
  EXPECT_EQ(TargetsOf(full, 0, 1024).value().size(), 1024u);
}

TEST(PinglistTest, TargetsOfAHostNotInTheListIsAnError) {
  const Pinglist list = MustParse(kExample);
  EXPECT_EQ(TargetsOf(list, 4).status().message(), "pinglist.yaml: no host 4 (the list has 4)");
  Pinglist broken = list;
  broken.rules[0].to.push_back(17);
  EXPECT_EQ(TargetsOf(broken, 0).status().message(),
            "pinglist.yaml: mesh.0 (group rack-a) names host 17, but the list has 4");
}

}  // namespace
}  // namespace wharf::mesh
