// The bench cluster's sweep, UDP ping and iperf3 rate check.
#include "bench/cluster_check.h"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <memory>

#include "netns/netns_process.h"
#include "netns/thread_netns.h"
#include "bench/sockets.h"

namespace wharf::bench {
namespace {

constexpr uint16_t kPingPort = 7;  // inside a fresh namespace nothing else has it
constexpr uint16_t kIperf3Port = 5201;
constexpr DurationNs kIperf3StartupNs = 10 * kNsPerSec;
constexpr DurationNs kIperf3SlackNs = 20 * kNsPerSec;

// A UDP socket made inside host `host`'s namespace, bound to its address
// and `port`.
Result<UniqueFd> SocketOnHost(const netns::NetnsCluster& cluster, int host, uint16_t port) {
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<netns::ThreadNetns> inside,
                         netns::ThreadNetns::Enter(cluster.namespace_name(host)));
  UniqueFd fd(::socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0));
  if (!fd.valid()) return ErrnoToStatus(errno, "socket in " + cluster.namespace_name(host));
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port);
  ::inet_pton(AF_INET, cluster.address(host).c_str(), &addr.sin_addr);
  if (::bind(fd.get(), reinterpret_cast<const sockaddr*>(&addr), sizeof(addr)) != 0) {
    return ErrnoToStatus(errno, "bind " + cluster.address(host));
  }
  return fd;
}

// Waits up to `timeout_ns` for a datagram on `fd`; fills `from`.
bool Receive(int fd, std::array<char, 64>& buffer, sockaddr_in& from, DurationNs timeout_ns) {
  pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
  if (::poll(&p, 1, static_cast<int>(std::max<DurationNs>(1, timeout_ns / kNsPerMs))) != 1) {
    return false;
  }
  socklen_t len = sizeof(from);
  return ::recvfrom(fd, buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&from),
                    &len) > 0;
}

}  // namespace

Status SweepStaleBenchClusters(std::vector<std::string>* removed) {
  return netns::NetnsCluster::CleanupStale(kBenchClusterPrefix, removed);
}

Result<UdpPingResult> UdpPing(const netns::NetnsCluster& cluster, int from, int to, int count,
                              DurationNs timeout_ns, const Clock& clock) {
  WHARF_ASSIGN_OR_RETURN(UniqueFd client, SocketOnHost(cluster, from, 0));
  WHARF_ASSIGN_OR_RETURN(UniqueFd server, SocketOnHost(cluster, to, kPingPort));
  sockaddr_in server_addr{};
  server_addr.sin_family = AF_INET;
  server_addr.sin_port = htons(kPingPort);
  ::inet_pton(AF_INET, cluster.address(to).c_str(), &server_addr.sin_addr);
  UdpPingResult result;
  DurationNs total_ns = 0;
  std::array<char, 64> buffer{};
  for (int i = 0; i < count; ++i) {
    buffer[0] = static_cast<char>(i);
    const TimeNs start = clock.NowNs();
    ++result.sent;
    if (::sendto(client.get(), buffer.data(), buffer.size(), 0,
                 reinterpret_cast<const sockaddr*>(&server_addr), sizeof(server_addr)) < 0) {
      return ErrnoToStatus(errno, "sendto " + cluster.address(to));
    }
    sockaddr_in peer{};
    if (!Receive(server.get(), buffer, peer, timeout_ns)) continue;
    ::sendto(server.get(), buffer.data(), buffer.size(), 0, reinterpret_cast<sockaddr*>(&peer),
             sizeof(peer));
    if (!Receive(client.get(), buffer, peer, timeout_ns)) continue;
    const DurationNs rtt = clock.NowNs() - start;
    result.min_rtt_ns = result.received == 0 ? rtt : std::min(result.min_rtt_ns, rtt);
    result.max_rtt_ns = std::max(result.max_rtt_ns, rtt);
    total_ns += rtt;
    ++result.received;
  }
  if (result.received > 0) result.avg_rtt_ns = total_ns / result.received;
  return result;
}

Result<Iperf3Result> RunIperf3Between(const netns::NetnsCluster& cluster, int client, int server,
                                      int seconds, const std::string& binary) {
  return RunIperf3OnHosts(BenchHosts::OnCluster(cluster), client, server, seconds, binary,
                          kIperf3Port);
}

Result<Iperf3Result> RunIperf3OnHosts(const BenchHosts& hosts, int client, int server,
                                      int seconds, const std::string& binary, uint16_t port) {
  const std::string port_text = std::to_string(port);
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<netns::Subprocess> listener,
                         hosts.Spawn(server, {binary, "-s", "-1", "-B", hosts.address(server),
                                              "-p", port_text, "--forceflush"}));
  WHARF_RETURN_IF_ERROR(
      listener->WaitForStdoutLine("Server listening", kIperf3StartupNs).status().WithContext(
          "iperf3 server on host " + std::to_string(server)));
  WHARF_ASSIGN_OR_RETURN(
      netns::CommandOutput out,
      hosts.Run(client,
                {binary, "-c", hosts.address(server), "-B", hosts.address(client), "-p",
                 port_text, "-t", std::to_string(seconds), "-J"},
                seconds * kNsPerSec + kIperf3SlackNs));
  // The client's JSON carries iperf3's own error message when it failed.
  WHARF_ASSIGN_OR_RETURN(Iperf3Result result, ParseIperf3ClientJson(out.stdout_text));
  result.port = port;
  return result;
}

double TcpGoodputPerWireBit(int mtu) {
  return static_cast<double>(mtu - 52) / static_cast<double>(mtu + 14);
}

}  // namespace wharf::bench
