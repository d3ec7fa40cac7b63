// NetnsCluster: builds and tears down the namespaces, bridge and veths of a
// test cluster with `ip`, injects loss with `nft`, rate limits with `tc` and
// cut links with `ip link`, always through argv (RunChecked), never through a
// shell.
#include "netns/netns_cluster.h"

#include <sched.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <cerrno>
#include <filesystem>
#include <fstream>
#include <optional>
#include <set>
#include <sstream>
#include <utility>

#include "base/config_value.h"
#include "base/log.h"
#include "base/mutex.h"
#include "netns/bottleneck.h"
#include "netns/subprocess.h"

namespace wharf::netns {
namespace {

// Where `ip netns add` binds namespaces (iproute2's NETNS_RUN_DIR).
constexpr const char* kNetnsRunDir = "/var/run/netns";
constexpr const char* kBridge = "br0";
constexpr size_t kMaxPrefixChars = 32;
// Bound on CheckSupported's and CleanupStale's commands.
constexpr DurationNs kProbeTimeoutNs = 10 * kNsPerSec;

// Counters of this process's clusters that exist (between construction and
// Destroy), so that CleanupStale can tell them from leftovers of an earlier
// process that had the same pid. Never destroyed: a cluster held by a static
// may be destroyed after this would be.
struct LiveClusters {
  Mutex mu;
  std::set<int> counters ABSL_GUARDED_BY(mu);
};
LiveClusters& Live() {
  static auto* live = new LiveClusters;
  return *live;
}
std::atomic<int> g_next_counter{0};

bool IsLive(int counter) {
  LiveClusters& live = Live();
  MutexLock lock(live.mu);
  return live.counters.contains(counter);
}

std::string NetnsPath(const std::string& name) { return std::string(kNetnsRunDir) + "/" + name; }

bool NetnsExists(const std::string& name) {
  struct stat st {};
  return ::lstat(NetnsPath(name).c_str(), &st) == 0;
}

std::optional<int> ParseDecimal(std::string_view text) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  int value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  return value;
}

struct ParsedName {
  int pid;
  int counter;
};

// "<prefix>-<pid>-<n>-sw" or "<prefix>-<pid>-<n>-h<i>" -> {pid, n}; anything
// else (another prefix, a hand-made namespace) -> nullopt, so it is left alone.
std::optional<ParsedName> ParseNetnsName(std::string_view name, std::string_view prefix) {
  if (!name.starts_with(prefix) || name.size() <= prefix.size() || name[prefix.size()] != '-') {
    return std::nullopt;
  }
  std::string_view rest = name.substr(prefix.size() + 1);
  const size_t dash1 = rest.find('-');
  if (dash1 == std::string_view::npos) return std::nullopt;
  const size_t dash2 = rest.find('-', dash1 + 1);
  if (dash2 == std::string_view::npos) return std::nullopt;
  const std::optional<int> pid = ParseDecimal(rest.substr(0, dash1));
  const std::optional<int> counter = ParseDecimal(rest.substr(dash1 + 1, dash2 - dash1 - 1));
  const std::string_view role = rest.substr(dash2 + 1);
  const bool role_ok = role == "sw" || (role.size() > 1 && role[0] == 'h' &&
                                        ParseDecimal(role.substr(1)).has_value());
  if (!pid.has_value() || !counter.has_value() || !role_ok || *pid <= 0) return std::nullopt;
  return ParsedName{*pid, *counter};
}

// A lower bound on when `pid` started, in seconds since the epoch, or
// nullopt if there is no such process. /proc/stat's btime is whole seconds
// rounded down and /proc/<pid>/stat's starttime whole clock ticks rounded
// down, so the true start is never earlier than this.
std::optional<int64_t> ProcessStartLowerBound(int pid) {
  std::ifstream stat_file("/proc/" + std::to_string(pid) + "/stat");
  std::string stat_line;
  if (!std::getline(stat_file, stat_line)) return std::nullopt;
  // Fields after the command name, which is in parentheses and may hold
  // spaces: state is field 3, starttime field 22.
  const size_t paren = stat_line.rfind(')');
  if (paren == std::string::npos) return std::nullopt;
  std::istringstream fields(stat_line.substr(paren + 1));
  std::string field;
  for (int i = 3; i < 22 && fields >> field; ++i) {
  }
  uint64_t start_ticks = 0;
  if (!(fields >> start_ticks)) return std::nullopt;
  std::ifstream proc_stat("/proc/stat");
  int64_t boot_seconds = -1;
  for (std::string line; std::getline(proc_stat, line);) {
    if (line.starts_with("btime ")) boot_seconds = std::stoll(line.substr(6));
  }
  const long ticks_per_second = ::sysconf(_SC_CLK_TCK);
  if (boot_seconds < 0 || ticks_per_second <= 0) return std::nullopt;
  return boot_seconds + static_cast<int64_t>(start_ticks / static_cast<uint64_t>(ticks_per_second));
}

// True if the process now holding `pid` may have created namespace `name`:
// it exists and did not start after the namespace was made. A namespace
// older than the process belongs to an earlier holder of a recycled pid.
bool CreatorMayBeAlive(int pid, const std::string& name) {
  const std::optional<int64_t> started = ProcessStartLowerBound(pid);
  if (!started.has_value()) return false;
  struct stat st {};
  if (::stat(NetnsPath(name).c_str(), &st) != 0) return true;  // gone already: leave it
  return st.st_ctim.tv_sec >= *started;
}

// SIGKILLs every process whose network namespace is the one bound at
// /var/run/netns/<name> (as `ip netns pids` finds them), so that deleting the
// name really frees the namespace and everything in it. Does not wait.
void KillProcessesIn(const std::string& name) {
  struct stat ns_stat {};
  if (::stat(NetnsPath(name).c_str(), &ns_stat) != 0) return;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator("/proc", ec)) {
    const std::optional<int> pid = ParseDecimal(entry.path().filename().string());
    if (!pid.has_value() || *pid == ::getpid()) continue;
    struct stat st {};
    const std::string ns_link = entry.path().string() + "/ns/net";
    if (::stat(ns_link.c_str(), &st) == 0 && st.st_dev == ns_stat.st_dev &&
        st.st_ino == ns_stat.st_ino) {
      ::kill(*pid, SIGKILL);
    }
  }
}

// Kills the processes inside each named namespace and deletes it. A name
// already gone (another cleaner was first) is fine; returns the first other
// failure.
Status DeleteNamespaces(const std::vector<std::string>& names) {
  Status first_error;
  for (const std::string& name : names) {
    KillProcessesIn(name);
    Result<CommandOutput> deleted =
        RunChecked({"ip", "netns", "delete", name}, {}, kProbeTimeoutNs);
    if (!deleted.ok() && NetnsExists(name) && first_error.ok()) first_error = deleted.status();
  }
  return first_error;
}

// Options for a cluster command: inside `netns` (empty: the caller's), with
// `stdin_data` as its input if given.
// The most strict-priority levels a link gets (DSCP class selectors 0..7).
constexpr int kMaxPriorityLevels = 8;

// A tc size ("125000b", "64kb", "1mb": b is bytes, k and m powers of 1024,
// as tc reads them) in bytes.
Result<int64_t> ParseTcSize(std::string_view text) {
  size_t digits = 0;
  while (digits < text.size() && std::isdigit(static_cast<unsigned char>(text[digits]))) ++digits;
  const std::string_view unit = text.substr(digits);
  int64_t scale = 0;
  if (unit.empty() || unit == "b") scale = 1;
  if (unit == "k" || unit == "kb") scale = 1024;
  if (unit == "m" || unit == "mb") scale = 1024 * 1024;
  if (digits == 0 || digits > 12 || scale == 0) {
    return InvalidArgumentError("tc size '" + std::string(text) +
                                "': expected digits and b, kb or mb");
  }
  return std::stoll(std::string(text.substr(0, digits))) * scale;
}

SubprocessOptions CommandOptions(std::string netns,
                                 std::optional<std::string> stdin_data = std::nullopt) {
  SubprocessOptions options;
  options.netns = std::move(netns);
  options.stdin_data = std::move(stdin_data);
  return options;
}

Status ValidateOptions(const ClusterOptions& options) {
  if (options.hosts < 1 || options.hosts > NetnsCluster::kMaxHosts) {
    return InvalidArgumentError("ClusterOptions.hosts must be 1 to " +
                                std::to_string(NetnsCluster::kMaxHosts) + ", got " +
                                std::to_string(options.hosts));
  }
  if (options.mtu < 68 || options.mtu > 65535) {
    return InvalidArgumentError("ClusterOptions.mtu must be 68 to 65535, got " +
                                std::to_string(options.mtu));
  }
  const std::string& prefix = options.prefix;
  const bool prefix_ok =
      !prefix.empty() && prefix.size() <= kMaxPrefixChars && std::islower(prefix[0]) != 0 &&
      std::all_of(prefix.begin(), prefix.end(),
                  [](char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); });
  if (!prefix_ok) {
    return InvalidArgumentError(
        "ClusterOptions.prefix must match [a-z][a-z0-9]* (at most 32), got '" + prefix + "'");
  }
  if (options.direct_pair && options.hosts != 2) {
    return InvalidArgumentError("ClusterOptions.direct_pair needs hosts = 2, got " +
                                std::to_string(options.hosts));
  }
  if (options.command_timeout_ns <= 0) {
    return InvalidArgumentError("ClusterOptions.command_timeout_ns must be positive");
  }
  return OkStatus();
}

}  // namespace

NetnsCluster::NetnsCluster(ClusterOptions options, int pid, int counter, int subnet_octet)
    : options_(std::move(options)),
      counter_(counter),
      tag_(options_.prefix + "-" + std::to_string(pid) + "-" + std::to_string(counter)),
      switch_netns_(options_.direct_pair ? "" : tag_ + "-sw"),
      mtu_(options_.mtu),
      subnet_octet_(subnet_octet),
      loss_table_(options_.prefix + "_" + std::to_string(pid) + "_" + std::to_string(counter) +
                  "_loss") {
  for (int i = 0; i < options_.hosts; ++i) {
    hosts_.push_back(
        Host{.netns = tag_ + "-h" + std::to_string(i),
             .address = "198.18." + std::to_string(subnet_octet_) + "." + std::to_string(i + 1)});
  }
  LiveClusters& live = Live();
  MutexLock lock(live.mu);
  live.counters.insert(counter_);
}

Result<std::unique_ptr<NetnsCluster>> NetnsCluster::Create(ClusterOptions options) {
  WHARF_RETURN_IF_ERROR(ValidateOptions(options));
  // A leftover we cannot delete must not fail this run: it cannot collide
  // with the names below, which carry this process's pid and a fresh counter.
  if (Status stale = CleanupStale(options.prefix); !stale.ok()) {
    WHARF_LOG(kWarn, "netns: leftovers of earlier runs remain: {}", stale.ToString());
  }
  const int pid = static_cast<int>(::getpid());
  const int counter = g_next_counter.fetch_add(1);
  // Any spread over 1..254 will do (clusters are isolated; see the header).
  const int subnet_octet = 1 + static_cast<int>((static_cast<int64_t>(pid) * 31 + counter) % 254);
  auto cluster = std::unique_ptr<NetnsCluster>(
      new NetnsCluster(std::move(options), pid, counter, subnet_octet));
  // On any failure below, `cluster` going out of scope runs Destroy(), which
  // removes whatever part was built.
  WHARF_RETURN_IF_ERROR(cluster->CreateNamespaces());
  WHARF_RETURN_IF_ERROR(cluster->direct_pair() ? cluster->BuildDirectPair()
                                               : cluster->BuildSwitch());
  for (int i = 0; i < cluster->host_count(); ++i) {
    WHARF_RETURN_IF_ERROR(cluster->ConfigureHost(i));
  }
  const TimeNs deadline = SystemClock::Get().NowNs() + cluster->options_.command_timeout_ns;
  for (int i = 0; i < cluster->host_count(); ++i) {
    WHARF_RETURN_IF_ERROR(cluster->WaitForLink(i, deadline));
  }
  return cluster;
}

Status NetnsCluster::CheckSupported() {
  if (::geteuid() != 0) return PermissionDeniedError("network namespace tests need root");
  Result<CommandOutput> ip = RunCommand({"ip", "netns", "list"}, {}, kProbeTimeoutNs);
  if (!ip.ok()) return std::move(ip).status().WithContext("`ip netns` is unavailable");
  if (ip->exit_code != 0) {
    return UnavailableError("`ip netns list` failed: " + ip->stderr_text);
  }
  // Creating a namespace can still be refused (a container without
  // CAP_SYS_ADMIN, a seccomp filter): try it in a throwaway child.
  const pid_t child = ::fork();
  if (child < 0) return ErrnoToStatus(errno, "fork");
  if (child == 0) ::_exit(::unshare(CLONE_NEWNET) == 0 ? 0 : 1);
  int status = 0;
  while (::waitpid(child, &status, 0) < 0 && errno == EINTR) {
  }
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
    return PermissionDeniedError("unshare(CLONE_NEWNET) is not permitted here");
  }
  return OkStatus();
}

Status NetnsCluster::CleanupStale(std::string_view prefix, std::vector<std::string>* removed) {
  std::vector<std::string> stale;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kNetnsRunDir, ec)) {
    const std::string name = entry.path().filename().string();
    const std::optional<ParsedName> parsed = ParseNetnsName(name, prefix);
    if (!parsed.has_value()) continue;
    if (parsed->pid == ::getpid()) {
      if (IsLive(parsed->counter)) continue;
    } else if (CreatorMayBeAlive(parsed->pid, name)) {
      continue;  // its creator may still run; it cleans up itself
    }
    stale.push_back(name);
  }
  Status first_error = DeleteNamespaces(stale);
  if (removed != nullptr) {
    for (const std::string& name : stale) {
      if (!NetnsExists(name)) removed->push_back(name);
    }
  }
  return first_error;
}

Status NetnsCluster::RemoveCluster(std::string_view tag) {
  // The tag's own prefix is everything before "-<pid>-<n>".
  const size_t counter_dash = tag.rfind('-');
  const size_t pid_dash =
      counter_dash == std::string_view::npos || counter_dash == 0 ? std::string_view::npos
                                                                  : tag.rfind('-', counter_dash - 1);
  if (pid_dash == std::string_view::npos) {
    return InvalidArgumentError("'" + std::string(tag) + "' is not a cluster tag");
  }
  const std::string_view prefix = tag.substr(0, pid_dash);
  std::vector<std::string> names;
  std::error_code ec;
  for (const auto& entry : std::filesystem::directory_iterator(kNetnsRunDir, ec)) {
    const std::string name = entry.path().filename().string();
    // Parsing (not just a starts_with) keeps "wbc-1-1" from matching "wbc-1-10-h0".
    if (ParseNetnsName(name, prefix).has_value() && name.starts_with(tag) &&
        name.size() > tag.size() && name[tag.size()] == '-' &&
        name.find('-', tag.size() + 1) == std::string::npos) {
      names.push_back(name);
    }
  }
  return DeleteNamespaces(names);
}

NetnsCluster::~NetnsCluster() {
  if (Status status = Destroy(); !status.ok()) {
    WHARF_LOG(kError, "netns: cleaning up cluster {} failed: {}", tag_, status.ToString());
  }
}

Status NetnsCluster::Destroy() {
  if (destroyed_) return OkStatus();
  destroyed_ = true;
  std::vector<std::string> names;
  for (const Host& host : hosts_) names.push_back(host.netns);
  if (!switch_netns_.empty()) names.push_back(switch_netns_);
  std::string script;
  for (const std::string& name : names) {
    if (!NetnsExists(name)) continue;
    KillProcessesIn(name);
    script += "netns delete " + name + "\n";
  }
  Status status;
  if (!script.empty()) {
    // -force: keep deleting past a failure; what remains is checked below.
    Result<CommandOutput> deleted = RunChecked(
        {"ip", "-force", "-batch", "-"}, CommandOptions("", script), options_.command_timeout_ns);
    std::string remaining;
    for (const std::string& name : names) {
      if (NetnsExists(name)) remaining += (remaining.empty() ? "" : ", ") + name;
    }
    if (!remaining.empty()) {
      status = InternalError("namespaces " + remaining +
                             " remain after deleting them: " + deleted.status().ToString());
    }
  }
  LiveClusters& live = Live();
  MutexLock lock(live.mu);
  live.counters.erase(counter_);
  return status;
}

std::string NetnsCluster::subnet() const {
  return "198.18." + std::to_string(subnet_octet_) + ".0/24";
}

std::string NetnsCluster::SwitchPort(int host) { return "p" + std::to_string(host); }

Status NetnsCluster::RunIpBatch(const std::string& netns, std::string script) {
  std::vector<std::string> argv = {"ip"};
  if (!netns.empty()) argv.insert(argv.end(), {"-n", netns});
  argv.insert(argv.end(), {"-batch", "-"});
  return RunChecked(std::move(argv), CommandOptions("", std::move(script)),
                    options_.command_timeout_ns)
      .status();
}

Status NetnsCluster::CreateNamespaces() {
  std::string script = switch_netns_.empty() ? "" : "netns add " + switch_netns_ + "\n";
  for (const Host& host : hosts_) script += "netns add " + host.netns + "\n";
  return RunIpBatch("", std::move(script)).WithContext("creating namespaces of " + tag_);
}

Status NetnsCluster::BuildSwitch() {
  // addrgenmode none: no IPv6 link-local addresses, so the only addresses in
  // a cluster are its 198.18.X.0/24 ones (and loopback).
  std::string script = "link set lo up\n";
  script += std::string("link add ") + kBridge + " type bridge\n";
  script += std::string("link set ") + kBridge + " addrgenmode none\n";
  script += std::string("link set ") + kBridge + " up\n";
  const std::string mtu = std::to_string(mtu_);
  for (int i = 0; i < host_count(); ++i) {
    const std::string port = SwitchPort(i);
    // The peer is created directly inside the host namespace: nothing ever
    // appears in the root namespace, so names there cannot collide.
    script += "link add " + port + " mtu " + mtu + " type veth peer name " + kHostInterface +
              " mtu " + mtu + " netns " + hosts_[i].netns + "\n";
    script += "link set " + port + " addrgenmode none\n";
    script += "link set " + port + " master " + kBridge + "\n";
    script += "link set " + port + " up\n";
  }
  WHARF_RETURN_IF_ERROR(
      RunIpBatch(switch_netns_, std::move(script)).WithContext("building the switch of " + tag_));
  // With br_netfilter loaded (Docker loads it), bridged packets go through
  // the iptables hooks of the switch's namespace: empty, but a few
  // microseconds of CPU per packet on a 2-CPU machine for nothing. The
  // switch of a real network runs no firewall. Absent keys (no
  // br_netfilter) are fine.
  return RunChecked({"sh", "-c",
                     "for f in /proc/sys/net/bridge/bridge-nf-call-*; do "
                     "[ -w \"$f\" ] && echo 0 > \"$f\"; done; true"},
                    CommandOptions(switch_netns_), options_.command_timeout_ns)
      .status()
      .WithContext("turning bridge netfilter off in the switch of " + tag_);
}

Status NetnsCluster::BuildDirectPair() {
  // Host 0's eth0 with its peer created directly in host 1 as eth0: no
  // interface ever appears in the root namespace (as BuildSwitch).
  const std::string mtu = std::to_string(mtu_);
  return RunIpBatch(hosts_[0].netns, std::string("link add ") + kHostInterface + " mtu " + mtu +
                                         " type veth peer name " + kHostInterface + " mtu " + mtu +
                                         " netns " + hosts_[1].netns + "\n")
      .WithContext("building the veth pair of " + tag_);
}

Status NetnsCluster::ConfigureHost(int host) {
  const std::string dev = kHostInterface;
  std::string script = "link set lo up\n";
  script += "link set " + dev + " addrgenmode none\n";
  script += "addr add " + hosts_[host].address + "/24 dev " + dev + "\n";
  script += "link set " + dev + " up\n";
  return RunIpBatch(hosts_[host].netns, std::move(script))
      .WithContext("configuring host " + std::to_string(host) + " of " + tag_);
}

Status NetnsCluster::CheckHost(int host) const {
  if (host < 0 || host >= host_count()) {
    return InvalidArgumentError("host " + std::to_string(host) + " is not in cluster " + tag_ +
                                " of " + std::to_string(host_count()) + " hosts");
  }
  return OkStatus();
}

Status NetnsCluster::SetLoss(int host, int percent) {
  WHARF_RETURN_IF_ERROR(CheckHost(host));
  if (percent < 0 || percent > 100) {
    return InvalidArgumentError("loss percent must be 0 to 100, got " + std::to_string(percent));
  }
  // Declaring then deleting the table makes one atomic transaction that
  // replaces any earlier setting (and is a no-op delete when there was none).
  std::string script = "table inet " + loss_table_ + "\ndelete table inet " + loss_table_ + "\n";
  if (percent > 0) {
    // Only packets arriving on the cluster link: UDP a host sends to itself
    // over loopback also passes the input hook and must not be dropped.
    script += "table inet " + loss_table_ + " {\n";
    script += "  chain input {\n";
    script += "    type filter hook input priority -10; policy accept;\n";
    // numgen's values are 0..99, so nft rejects "< 100": drop all instead.
    const std::string sample =
        percent < 100 ? "numgen random mod 100 < " + std::to_string(percent) + " " : "";
    script += std::string("    iifname \"") + kHostInterface + "\" meta l4proto udp " + sample +
              "counter drop\n";
    script += "  }\n}\n";
  }
  return RunChecked({"nft", "-f", "-"}, CommandOptions(hosts_[host].netns, script),
                    options_.command_timeout_ns)
      .status()
      .WithContext("SetLoss(host " + std::to_string(host) + ", " + std::to_string(percent) + "%)");
}

Result<int64_t> NetnsCluster::LossDropCount(int host) {
  WHARF_RETURN_IF_ERROR(CheckHost(host));
  WHARF_ASSIGN_OR_RETURN(
      CommandOutput listed,
      RunChecked({"nft", "list", "table", "inet", loss_table_}, CommandOptions(hosts_[host].netns),
                 options_.command_timeout_ns));
  constexpr std::string_view kCounter = "counter packets ";
  const size_t at = listed.stdout_text.find(kCounter);
  if (at == std::string::npos) {
    return InternalError("no counter in the loss table of host " + std::to_string(host) + ": " +
                         listed.stdout_text);
  }
  int64_t packets = 0;
  for (size_t i = at + kCounter.size();
       i < listed.stdout_text.size() &&
       std::isdigit(static_cast<unsigned char>(listed.stdout_text[i]));
       ++i) {
    packets = packets * 10 + (listed.stdout_text[i] - '0');
  }
  return packets;
}

std::string NetnsCluster::DescribeFiltering(int host) {
  if (!CheckHost(host).ok()) return "no host " + std::to_string(host);
  std::string text;
  for (const std::vector<std::string>& argv :
       {std::vector<std::string>{"nft", "list", "ruleset"},
        std::vector<std::string>{"ip", "-s", "link", "show", kHostInterface}}) {
    Result<CommandOutput> out =
        RunCommand(argv, CommandOptions(hosts_[host].netns), options_.command_timeout_ns);
    text += "$ " + argv[0] + " " + argv[1] + " " + argv[2] + " (" + hosts_[host].netns + ")\n";
    text += out.ok() ? out->stdout_text + out->stderr_text : out.status().ToString() + "\n";
  }
  return text;
}

Status NetnsCluster::ApplyTbf(const std::string& netns, const std::string& device,
                              std::string_view rate, const TbfOptions& tbf) {
  if (rate.empty()) return InvalidArgumentError("empty rate for " + netns + "/" + device);
  if (tbf.priority_levels < 1 || tbf.priority_levels > kMaxPriorityLevels) {
    return InvalidArgumentError("priority_levels " + std::to_string(tbf.priority_levels) +
                                ": expected 1 to 8");
  }
  if (tbf.priority_levels > 1) return ApplyPriorityQueues(netns, device, rate, tbf);
  return RunChecked({"tc", "-n", netns, "qdisc", "replace", "dev", device, "root", "tbf", "rate",
                     std::string(rate), "burst", tbf.burst, "latency", tbf.latency},
                    {}, options_.command_timeout_ns)
      .status();
}

Status NetnsCluster::ApplyPriorityQueues(const std::string& netns, const std::string& device,
                                         std::string_view rate, const TbfOptions& tbf) {
  WHARF_ASSIGN_OR_RETURN(int64_t bits_per_second, ParseRateBitsPerSecond(rate));
  WHARF_ASSIGN_OR_RETURN(int64_t burst_bytes, ParseTcSize(tbf.burst));
  WHARF_ASSIGN_OR_RETURN(DurationNs latency_ns, ParseDuration(tbf.latency));
  // Each class buffers what the single tbf would: `latency` of the rate
  // plus the burst (a switch shares one buffer among its queues; separate ones keep
  // a flood of low-priority bytes from costing high-priority drops, which
  // is the point of the priorities).
  const auto limit = static_cast<int64_t>(static_cast<__int128>(bits_per_second) / 8 *
                                          latency_ns / kNsPerSec) +
                     burst_bytes;
  const std::string r(rate);
  const std::string burst = std::to_string(burst_bytes) + "b";
  // htb's quantum only shares a rate among classes of one prio, which
  // never happens here; an explicit one keeps tc from warning that the
  // rate-derived default is out of range.
  const std::string quantum = "60000";
  // Each class's queue is a tbf at ten times the rate with the htb's
  // bucket: it never sets the pace (the htb does), but it cuts a GSO packet
  // longer than the bucket (a TCP TSO segment or a UDP GSO run, up to
  // 64 KiB) into its frames as it is queued, so the htb serializes each at
  // the rate like a switch port. htb alone would let the whole GSO packet
  // through at once and only make the next one wait.
  const std::string leaf_rate = std::to_string(10 * bits_per_second) + "bit";
  const std::string& leaf_burst = burst;
  std::ostringstream script;
  // An earlier limit goes first: "replace" cannot turn an htb into a new
  // one ("change operation not supported"), and its classes would clash.
  WHARF_RETURN_IF_ERROR(ClearTbf(netns, device));
  script << "qdisc add dev " << device << " root handle 1: htb default 10\n";
  script << "class add dev " << device << " parent 1: classid 1:1 htb rate " << r << " ceil "
         << r << " burst " << burst << " cburst " << burst << " quantum " << quantum << "\n";
  for (int level = 0; level < tbf.priority_levels; ++level) {
    const int cls = 10 + level;
    // A guaranteed rate of 8 bit/s makes every byte borrowed from 1:1, and
    // htb lends in prio order (0 first): strict priority, highest DSCP first.
    script << "class add dev " << device << " parent 1:1 classid 1:" << cls
           << " htb rate 8bit ceil " << r << " burst " << burst << " cburst " << burst
           << " quantum " << quantum << " prio " << (kMaxPriorityLevels - 1 - level) << "\n";
    script << "qdisc add dev " << device << " parent 1:" << cls << " handle " << (20 + level)
           << ": tbf rate " << leaf_rate << " burst " << leaf_burst << " limit " << limit
           << "\n";
  }
  // DSCP class selector p (TOS p << 5) to its class; the levels above the
  // top one share it.
  for (int dscp = 1; dscp < kMaxPriorityLevels; ++dscp) {
    const int level = std::min(dscp, tbf.priority_levels - 1);
    script << "filter add dev " << device << " parent 1: protocol ip prio 1 u32 match ip tos "
           << (dscp << 5) << " 0xe0 flowid 1:" << (10 + level) << "\n";
  }
  return RunChecked({"tc", "-n", netns, "-batch", "-"}, CommandOptions("", script.str()),
                    options_.command_timeout_ns)
      .status()
      .WithContext("priority queues on " + netns + "/" + device);
}

Status NetnsCluster::ClearTbf(const std::string& netns, const std::string& device) {
  // Deleting the default root qdisc is an error, so look first.
  WHARF_ASSIGN_OR_RETURN(CommandOutput shown,
                         RunChecked({"tc", "-n", netns, "qdisc", "show", "dev", device, "root"}, {},
                                    options_.command_timeout_ns));
  if (shown.stdout_text.find("qdisc tbf") == std::string::npos &&
      shown.stdout_text.find("qdisc htb") == std::string::npos) {
    return OkStatus();
  }
  return RunChecked({"tc", "-n", netns, "qdisc", "del", "dev", device, "root"}, {},
                    options_.command_timeout_ns)
      .status();
}

Status NetnsCluster::SetEgressRate(int host, std::string_view rate, const TbfOptions& tbf) {
  WHARF_RETURN_IF_ERROR(CheckHost(host));
  return ApplyTbf(hosts_[host].netns, kHostInterface, rate, tbf)
      .WithContext("SetEgressRate(host " + std::to_string(host) + ")");
}

Status NetnsCluster::SetIngressRate(int host, std::string_view rate, const TbfOptions& tbf) {
  WHARF_RETURN_IF_ERROR(CheckHost(host));
  if (direct_pair()) {
    return FailedPreconditionError("SetIngressRate: a direct pair has no switch; limit the other "
                                   "host's egress instead");
  }
  return ApplyTbf(switch_netns_, SwitchPort(host), rate, tbf)
      .WithContext("SetIngressRate(host " + std::to_string(host) + ")");
}

Status NetnsCluster::ClearRates(int host) {
  WHARF_RETURN_IF_ERROR(CheckHost(host));
  WHARF_RETURN_IF_ERROR(ClearTbf(hosts_[host].netns, kHostInterface));
  if (direct_pair()) return OkStatus();
  return ClearTbf(switch_netns_, SwitchPort(host));
}

Status NetnsCluster::SetLinkUp(int host, bool up) {
  WHARF_RETURN_IF_ERROR(CheckHost(host));
  const std::string context =
      "SetLinkUp(host " + std::to_string(host) + ", " + (up ? "true" : "false") + ")";
  if (direct_pair()) return FailedPreconditionError(context + ": a direct pair has no switch");
  WHARF_RETURN_IF_ERROR(
      RunChecked({"ip", "-n", switch_netns_, "link", "set", SwitchPort(host), up ? "up" : "down"},
                 {}, options_.command_timeout_ns)
          .status()
          .WithContext(context));
  // Down takes effect at once (the bridge disables the port synchronously);
  // up does not (see WaitForLink).
  if (!up) return OkStatus();
  return WaitForLink(host, SystemClock::Get().NowNs() + options_.command_timeout_ns)
      .WithContext(context);
}

Status NetnsCluster::WaitForLink(int host, TimeNs deadline) {
  while (true) {
    WHARF_ASSIGN_OR_RETURN(CommandOutput eth, RunChecked({"ip", "-n", hosts_[host].netns, "-o",
                                                          "link", "show", kHostInterface},
                                                         {}, options_.command_timeout_ns));
    // A direct pair has no switch port: its eth0 up (which needs the peer
    // up too) is the whole link.
    CommandOutput port{.exit_code = 0, .stdout_text = "state forwarding"};
    if (!direct_pair()) {
      WHARF_ASSIGN_OR_RETURN(port, RunChecked({"ip", "-n", switch_netns_, "-d", "-o", "link",
                                               "show", SwitchPort(host)},
                                              {}, options_.command_timeout_ns));
    }
    if (eth.stdout_text.find("state UP") != std::string::npos &&
        port.stdout_text.find("state forwarding") != std::string::npos) {
      return OkStatus();
    }
    if (SystemClock::Get().NowNs() >= deadline) {
      return DeadlineExceededError("the link of host " + std::to_string(host) +
                                   " did not come up: " + eth.stdout_text + port.stdout_text);
    }
    ::usleep(5000);
  }
}

}  // namespace wharf::netns
