// netns/netns_cluster.h: a small network of "hosts" built from Linux network
// namespaces, for the multi-host tests and `wharf bench cluster`, plus the
// faults tests inject into it (random UDP loss with nftables, rate limits
// with tc tbf, a cut cable).
//
//   switch namespace <tag>-sw:  br0 ── p0 ── p1 ── ... (a Linux bridge)
//                                      │     │
//   host namespaces <tag>-h<i>:       eth0  eth0     198.18.<X>.<i+1>/24
//
// With ClusterOptions::direct_pair, two hosts and no switch: one veth pair
// whose ends are the two hosts' eth0 (a back-to-back cable, nothing between
// them to forward or queue), for point-to-point measurements.
//
// <tag> is "<prefix>-<pid>-<n>": the creating process and a per-process
// counter, so clusters of parallel tests (and of parallel instances of one
// test) never share a name. Every interface lives inside the cluster's own
// namespaces (veth peers are created directly there), so interface names
// cannot collide across clusters and nothing is added to the root namespace.
// Clusters are separate layer-2 segments with no route between them; the
// per-cluster subnet X only keeps logs of parallel runs readable.
//
// Does not hold process management (subprocess.h, netns_process.h), the
// bench's bottleneck policy (bottleneck.h) or signal handling (a program's
// business: bench/cluster_guard.h).
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::netns {

struct ClusterOptions {
  // Host namespaces to create, 1 to kMaxHosts.
  int hosts = 2;
  // MTU of every link (veth ends and bridge ports), in bytes, 68 to 65535.
  int mtu = 1500;
  // First part of every namespace name: [a-z][a-z0-9]*, at most 32
  // characters. Tests that inspect or clean up namespaces use their own.
  std::string prefix = "wharf";
  // Exactly 2 hosts joined by one veth pair (host 0's eth0 to host 1's
  // eth0), no bridge and no switch namespace: switch_namespace() is empty,
  // and SetIngressRate and SetLinkUp, which act on the switch, fail
  // (kFailedPrecondition). `hosts` must be 2.
  bool direct_pair = false;
  // Bound on each ip/nft/tc command the cluster runs.
  DurationNs command_timeout_ns = 20 * kNsPerSec;
};

// Parameters of a tc tbf rate limit besides the rate.
struct TbfOptions {
  // Bucket size: bytes that may leave back to back at line rate.
  std::string burst = "64kb";
  // Longest a packet may wait in the queue before tbf drops it; this sets
  // the bottleneck's buffer.
  std::string latency = "20ms";
  // 1: one FIFO behind the rate limit (a tbf). 2..8: strict-priority queues
  // like a datacenter switch port, which Homa's SRPT relies on: an htb
  // parent at the rate over one class per priority (htb prio order, each
  // borrowing the whole rate), chosen by the DSCP class selector (the top
  // three bits of the IP TOS byte; 0, and everything unmarked such as TCP,
  // is the lowest), each class a queue holding `latency` of the rate plus
  // `burst` that cuts GSO packets into frames (a tbf well above the rate).
  int priority_levels = 1;
};

// Owns the namespaces, bridge, veth pairs, nft tables and qdiscs of one
// cluster; Destroy() or the destructor removes them all. Not thread-safe.
// Processes started inside the hosts (netns_process.h) should be destroyed
// before the cluster; any still inside at Destroy() are killed.
class NetnsCluster {
 public:
  static constexpr int kMaxHosts = 250;
  // The host side of each host's veth pair, inside its namespace.
  static constexpr const char* kHostInterface = "eth0";

  // Builds the cluster, first removing leftovers of dead processes under the
  // same prefix (CleanupStale), and returns once every link carries packets.
  // On failure everything created so far is removed and the Status names the
  // failing command and its stderr.
  static Result<std::unique_ptr<NetnsCluster>> Create(ClusterOptions options = {});

  // OK if this process can build clusters: root, an `ip` with netns support,
  // and permission to create network namespaces. Tests skip otherwise.
  static Status CheckSupported();

  // Deletes namespaces named "<prefix>-<pid>-<n>-..." whose creating process
  // is gone: no process has <pid>, or the one that has it started after the
  // namespace was made (a recycled pid), or it is this process and no live
  // cluster of it has counter <n>. Kills any process still inside first.
  // Safe to run while other processes build clusters under the same prefix.
  // Returns the first failure, if any; appends the deleted names to
  // `removed` when given.
  static Status CleanupStale(std::string_view prefix,
                             std::vector<std::string>* removed = nullptr);

  // Deletes every namespace of the cluster tagged `tag` ("<prefix>-<pid>-<n>",
  // see tag()), killing processes inside first, without a NetnsCluster
  // object: for a signal-handling thread that must not touch the object the
  // main thread is using, and for tearing down a cluster another process
  // left. Namespaces already gone are fine. Returns the first failure.
  static Status RemoveCluster(std::string_view tag);

  ~NetnsCluster();
  NetnsCluster(const NetnsCluster&) = delete;
  NetnsCluster& operator=(const NetnsCluster&) = delete;

  // Kills processes left inside, deletes every namespace (which takes the
  // bridge, veths, nft tables and qdiscs with it). Idempotent; the destructor
  // calls it and logs a failure.
  Status Destroy();

  // "<prefix>-<pid>-<n>": the start of every namespace name of this cluster.
  const std::string& tag() const { return tag_; }
  int host_count() const { return static_cast<int>(hosts_.size()); }
  int mtu() const { return mtu_; }
  // For host in [0, host_count()): the `ip netns` name and IPv4 address
  // ("198.18.7.2"); an index out of range throws std::out_of_range.
  const std::string& namespace_name(int host) const { return hosts_.at(host).netns; }
  const std::string& address(int host) const { return hosts_.at(host).address; }
  // The switch's namespace; "" for a direct pair.
  const std::string& switch_namespace() const { return switch_netns_; }
  bool direct_pair() const { return options_.direct_pair; }
  // "198.18.7.0/24".
  std::string subnet() const;

  // Drops `percent`% (0 to 100) of the UDP packets host `host` receives, at
  // random, with an nftables rule in its namespace; replaces an earlier
  // setting, and 0 removes the rule.
  Status SetLoss(int host, int percent);
  // Packets the loss rule of `host` has dropped since SetLoss installed it.
  Result<int64_t> LossDropCount(int host);
  // For a test's failure message: the host's whole nftables ruleset and its
  // link's counters (`ip -s link`), as the host sees them now.
  std::string DescribeFiltering(int host);

  // Limits what `host` sends (tbf on its eth0) to `rate`, a tc rate such as
  // "100mbit". Replaces an earlier limit.
  Status SetEgressRate(int host, std::string_view rate, const TbfOptions& tbf = {});
  // Limits what the switch sends to `host` (tbf on the bridge port facing
  // it): the bottleneck where traffic from several senders queues.
  Status SetIngressRate(int host, std::string_view rate, const TbfOptions& tbf = {});
  // Removes both limits of `host`; no-op where none is set.
  Status ClearRates(int host);

  // Cuts (`up` false) or restores the cable of `host`: the switch port
  // facing it goes down or up. Packets to and from the host then vanish
  // without a word (no ICMP, no RST), as when a host dies or is unplugged;
  // the host's own interface and addresses are untouched. Restoring returns
  // once packets flow again (the kernel takes up to a second).
  Status SetLinkUp(int host, bool up);

 private:
  struct Host {
    std::string netns;
    std::string address;
  };

  NetnsCluster(ClusterOptions options, int pid, int counter, int subnet_octet);

  // The steps of Create; each runs one command (an `ip -batch` script).
  Status CreateNamespaces();
  Status BuildSwitch();
  // direct_pair: the one veth pair between the two hosts.
  Status BuildDirectPair();
  Status ConfigureHost(int host);

  Status CheckHost(int host) const;
  // The switch port (in switch_netns_) facing `host`.
  static std::string SwitchPort(int host);
  Status ApplyTbf(const std::string& netns, const std::string& device, std::string_view rate,
                  const TbfOptions& tbf);
  Status ApplyPriorityQueues(const std::string& netns, const std::string& device,
                             std::string_view rate, const TbfOptions& tbf);
  Status ClearTbf(const std::string& netns, const std::string& device);
  // Waits until `host`'s link carries packets: its eth0 operationally up
  // and the switch port forwarding (a direct pair: both eth0 up). The kernel brings a new or restored
  // veth up from its link-watch work, which it runs at most once a second,
  // and drops packets until then; it announces the change only on netlink,
  // so this polls `ip` every 5 ms. kDeadlineExceeded after `deadline`.
  Status WaitForLink(int host, TimeNs deadline);
  // Runs `ip -batch -` with `script` on stdin, inside `netns` if not empty.
  Status RunIpBatch(const std::string& netns, std::string script);

  ClusterOptions options_;
  // Distinguishes clusters of one process; registered as live until Destroy.
  int counter_;
  std::string tag_;
  std::string switch_netns_;
  std::vector<Host> hosts_;
  int mtu_;
  // Third octet of the subnet, 1 to 254.
  int subnet_octet_;
  // Name of the nft table holding the loss rules (one per host namespace).
  std::string loss_table_;
  bool destroyed_ = false;
};

}  // namespace wharf::netns
