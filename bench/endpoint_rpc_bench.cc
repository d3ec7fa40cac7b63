// bench/endpoint_rpc_bench.cc: the CPU cost of one 64 B echo RPC through the
// public API over real loopback UDP sockets, both endpoints driven by one
// thread, next to the same exchange done with raw sockets. With no second
// thread there is no wake-up or cross-core latency in either number: what
// the two differ by is exactly the user-space and system-call work wharf adds
// to a round trip, the part `wharf bench baseline` can reduce.
//   BM_RawUdpRoundTrip/<bytes>/<connected>: send, recvfrom, sendto, recv (an
//     unconnected server socket; a connected client socket as the baseline's,
//     or an unconnected one, as wharf's shared socket).
//   BM_EndpointRoundTrip/<bytes>/<peer_rtt>/<rx_stamps>: Endpoint::ICall,
//     then Poll() the server and the Completion until the echo is back;
//     peer_rtt 0 turns off the engine's per-peer round-trip table
//     (endpoint.peer_rtt_peers: 0), rx_stamps 1 asks the kernel for receive
//     timestamps on both sockets (udp.rx_timestamps, as a probing wharfd
//     has), so the rows price passive measurement and kernel stamps.
//   BM_RawUdpIdleRecv / BM_EndpointIdleWait: one turn of each busy-poll loop
//     with nothing arriving: half of it is the average delay a spinning
//     receiver adds before it sees a packet.
#include <arpa/inet.h>
#include <benchmark/benchmark.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <new>
#include <string>
#include <vector>

#include "wharf/endpoint.h"

#include "counting_new.h"  // g_allocations: heap allocations so far

namespace wharf {
namespace {

constexpr uint32_t kEcho = 1;

sockaddr_in Loopback(uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}

int BoundUdpSocket() {
  int fd = ::socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  sockaddr_in a = Loopback(0);
  if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) != 0) return -1;
  return fd;
}

uint16_t PortOf(int fd) {
  sockaddr_in a{};
  socklen_t len = sizeof a;
  ::getsockname(fd, reinterpret_cast<sockaddr*>(&a), &len);
  return ntohs(a.sin_port);
}

// Arg 0: bytes; arg 1: 1 = connected client socket (as the baseline), 0 =
// unconnected (sendto with an address, as a socket shared by many peers).
void BM_RawUdpRoundTrip(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  const bool connected = state.range(1) != 0;
  int server = BoundUdpSocket();
  int client = BoundUdpSocket();
  sockaddr_in to = Loopback(PortOf(server));
  if (server < 0 || client < 0 ||
      (connected && ::connect(client, reinterpret_cast<sockaddr*>(&to), sizeof to) != 0)) {
    state.SkipWithError("cannot open loopback UDP sockets");
    return;
  }
  std::vector<char> buf(65536, 0x5a);
  for (auto _ : state) {
    if (::sendto(client, buf.data(), size, 0, connected ? nullptr : reinterpret_cast<sockaddr*>(&to),
                 connected ? 0 : sizeof to) < 0) {
      break;
    }
    sockaddr_storage from{};
    socklen_t from_len = sizeof from;
    ssize_t n;
    while ((n = ::recvfrom(server, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from),
                           &from_len)) < 0) {
    }
    ::sendto(server, buf.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&from),
             from_len);
    while (::recv(client, buf.data(), buf.size(), 0) < 0) {
    }
  }
  ::close(server);
  ::close(client);
}
BENCHMARK(BM_RawUdpRoundTrip)->Args({64, 1})->Args({64, 0});

void BM_EndpointRoundTrip(benchmark::State& state) {
  const size_t size = static_cast<size_t>(state.range(0));
  // No spinning inside Poll-driven calls; the loop below is the spinner.
  EndpointOptions options{.address = "homa://127.0.0.1:0",
                          .settings = {{"endpoint.spin", "0ns"}}};
  if (state.range(1) == 0) options.settings.push_back({"endpoint.peer_rtt_peers", "0"});
  if (state.range(2) == 1) options.settings.push_back({"udp.rx_timestamps", "true"});
  auto server = Endpoint::Open(options);
  auto client = Endpoint::Open(options);
  if (!server.ok() || !client.ok()) {
    state.SkipWithError("cannot open endpoints");
    return;
  }
  (void)(*server)->Serve(kEcho, [](const RpcContext&, Buffer b) { return Result<Buffer>(std::move(b)); });
  const std::string target = (*server)->address();
  const uint64_t allocations_before = g_allocations.load();
  for (auto _ : state) {
    Buffer request = Buffer::Allocate(size);
    std::memset(request.data(), 0x5a, size);
    Completion c = (*client)->ICall(target, kEcho, std::move(request));
    while (!c.Poll()) (*server)->Poll();
    if (!c.status().ok() || c.TakeMessage().size() != size) {
      state.SkipWithError("echo failed");
      break;
    }
  }
  state.counters["allocs"] = benchmark::Counter(
      static_cast<double>(g_allocations.load() - allocations_before),
      benchmark::Counter::kAvgIterations);
}
BENCHMARK(BM_EndpointRoundTrip)->Args({64, 1, 0})->Args({64, 0, 0})->Args({64, 1, 1});

void BM_RawUdpIdleRecv(benchmark::State& state) {
  int fd = BoundUdpSocket();
  char byte;
  for (auto _ : state) benchmark::DoNotOptimize(::recv(fd, &byte, 1, 0));
  ::close(fd);
}
BENCHMARK(BM_RawUdpIdleRecv);

void BM_EndpointIdleWait(benchmark::State& state) {
  auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0", .settings = {{"endpoint.spin", "1s"}}});
  if (!ep.ok()) {
    state.SkipWithError("cannot open endpoint");
    return;
  }
  // A call to a socket that never answers: each Wait(1ns) is one turn of the
  // spin loop.
  // spin loop. The peer is declared dead after homa.peer_timeout; a new call
  // then takes its place (rarely: the cost is spread over many turns).
  int silent = BoundUdpSocket();
  const std::string target = "homa://127.0.0.1:" + std::to_string(PortOf(silent));
  Completion c;
  for (auto _ : state) {
    if (!c.valid() || c.done()) c = (*ep)->ICall(target, kEcho, Buffer());
    benchmark::DoNotOptimize(c.Wait(std::chrono::nanoseconds(1)));
  }
  ::close(silent);
}
BENCHMARK(BM_EndpointIdleWait);

}  // namespace
}  // namespace wharf
