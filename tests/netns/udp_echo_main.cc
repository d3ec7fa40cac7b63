// wharf_netns_udp_echo: the test-only UDP peer of the netns tests, written
// with plain sockets so that the harness is tested without wharf itself.
//
//   wharf_netns_udp_echo serve <ipv4>[:port] [--count N]
//       Binds (port 0 by default: the kernel picks), prints
//       "listening on <ipv4>:<port>", echoes every datagram to its sender,
//       and after N echoes (N > 0) prints "echoed N" and exits 0.
//   wharf_netns_udp_echo probe <ipv4>:<port> --count N [--window W]
//                        [--timeout-ms T] [--size B] [--dont-fragment]
//       Sends N numbered datagrams of B bytes with at most W awaiting their
//       echo; one unanswered for T ms is given up and frees its slot (an echo
//       arriving later still counts). Prints "sent N received K", exits 0.
//
// Exit codes: 0 done, 1 a socket call failed (message on stderr), 2 usage.
#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace {

// Each probe datagram starts with kMagic, the prober's pid and a sequence
// number, so that strays (another run's late echoes) are ignored.
constexpr uint32_t kMagic = 0x77686172;  // "whar"
constexpr size_t kHeaderBytes = 12;
constexpr int kSocketBufferBytes = 1 << 20;

int Usage() {
  std::fprintf(stderr,
               "usage: wharf_netns_udp_echo serve <ipv4>[:port] [--count N]\n"
               "       wharf_netns_udp_echo probe <ipv4>:<port> --count N [--window W]\n"
               "                            [--timeout-ms T] [--size B] [--dont-fragment]\n");
  return 2;
}

int Fail(const char* what) {
  std::fprintf(stderr, "wharf_netns_udp_echo: %s: %s\n", what, std::strerror(errno));
  return 1;
}

std::optional<long> ParseNumber(std::string_view text, long min, long max) {
  if (text.empty() || text.size() > 9) return std::nullopt;
  long value = 0;
  for (char c : text) {
    if (c < '0' || c > '9') return std::nullopt;
    value = value * 10 + (c - '0');
  }
  if (value < min || value > max) return std::nullopt;
  return value;
}

// "198.18.7.2" or "198.18.7.2:4000"; a missing port is 0 unless required.
std::optional<sockaddr_in> ParseAddress(std::string_view text, bool port_required) {
  sockaddr_in address{};
  address.sin_family = AF_INET;
  const size_t colon = text.find(':');
  const std::string host(text.substr(0, colon));
  if (inet_pton(AF_INET, host.c_str(), &address.sin_addr) != 1) return std::nullopt;
  if (colon == std::string_view::npos) {
    if (port_required) return std::nullopt;
    return address;
  }
  const std::optional<long> port = ParseNumber(text.substr(colon + 1), 0, 65535);
  if (!port.has_value()) return std::nullopt;
  address.sin_port = htons(static_cast<uint16_t>(*port));
  return address;
}

std::string Format(const sockaddr_in& address) {
  char host[INET_ADDRSTRLEN] = {};
  inet_ntop(AF_INET, &address.sin_addr, host, sizeof(host));
  return std::string(host) + ":" + std::to_string(ntohs(address.sin_port));
}

int64_t NowMs() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return static_cast<int64_t>(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

void PutU32(unsigned char* out, uint32_t value) {
  for (int i = 0; i < 4; ++i) out[i] = static_cast<unsigned char>(value >> (8 * i));
}

uint32_t GetU32(const unsigned char* in) {
  uint32_t value = 0;
  for (int i = 0; i < 4; ++i) value |= static_cast<uint32_t>(in[i]) << (8 * i);
  return value;
}

int OpenSocket() {
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, 0);
  if (fd < 0) return -1;
  // Best effort: bursts of a window of datagrams should not overflow.
  setsockopt(fd, SOL_SOCKET, SO_RCVBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &kSocketBufferBytes, sizeof(kSocketBufferBytes));
  return fd;
}

int Serve(const sockaddr_in& bind_address, long count) {
  const int fd = OpenSocket();
  if (fd < 0) return Fail("socket");
  if (bind(fd, reinterpret_cast<const sockaddr*>(&bind_address), sizeof(bind_address)) != 0) {
    return Fail(("bind " + Format(bind_address)).c_str());
  }
  sockaddr_in bound{};
  socklen_t bound_size = sizeof(bound);
  if (getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &bound_size) != 0) {
    return Fail("getsockname");
  }
  std::printf("listening on %s\n", Format(bound).c_str());
  std::fflush(stdout);  // a pipe makes stdout fully buffered; the test waits for this line
  std::vector<unsigned char> buffer(65536);
  long echoed = 0;
  while (count == 0 || echoed < count) {
    sockaddr_in peer{};
    socklen_t peer_size = sizeof(peer);
    const ssize_t n = recvfrom(fd, buffer.data(), buffer.size(), 0,
                               reinterpret_cast<sockaddr*>(&peer), &peer_size);
    if (n < 0) {
      if (errno == EINTR) continue;
      return Fail("recvfrom");
    }
    if (sendto(fd, buffer.data(), static_cast<size_t>(n), 0, reinterpret_cast<sockaddr*>(&peer),
               peer_size) < 0) {
      return Fail(("sendto " + Format(peer)).c_str());
    }
    ++echoed;
  }
  std::printf("echoed %ld\n", echoed);
  std::fflush(stdout);
  close(fd);
  return 0;
}

struct ProbeOptions {
  long count = 0;
  long window = 32;
  long timeout_ms = 500;
  long size = 64;
  bool dont_fragment = false;
};

int Probe(const sockaddr_in& target, const ProbeOptions& options) {
  const int fd = OpenSocket();
  if (fd < 0) return Fail("socket");
  if (options.dont_fragment) {
    const int mode = IP_PMTUDISC_DO;
    if (setsockopt(fd, IPPROTO_IP, IP_MTU_DISCOVER, &mode, sizeof(mode)) != 0) {
      return Fail("IP_MTU_DISCOVER");
    }
  }
  if (connect(fd, reinterpret_cast<const sockaddr*>(&target), sizeof(target)) != 0) {
    return Fail(("connect " + Format(target)).c_str());
  }
  enum class State : unsigned char { kUnsent, kInFlight, kGivenUp, kEchoed };
  std::vector<State> state(static_cast<size_t>(options.count), State::kUnsent);
  struct Pending {
    uint32_t seq;
    int64_t deadline_ms;
  };
  std::deque<Pending> pending;  // in send order, so deadlines ascend
  const uint32_t nonce = static_cast<uint32_t>(getpid());
  std::vector<unsigned char> datagram(static_cast<size_t>(options.size));
  std::vector<unsigned char> reply(65536);
  long next = 0;
  long in_flight = 0;
  long received = 0;

  while (next < options.count || in_flight > 0) {
    const int64_t now = NowMs();
    while (!pending.empty() &&
           (pending.front().deadline_ms <= now || state[pending.front().seq] != State::kInFlight)) {
      if (state[pending.front().seq] == State::kInFlight) {
        state[pending.front().seq] = State::kGivenUp;
        --in_flight;
      }
      pending.pop_front();
    }
    while (next < options.count && in_flight < options.window) {
      const auto seq = static_cast<uint32_t>(next);
      PutU32(datagram.data(), kMagic);
      PutU32(datagram.data() + 4, nonce);
      PutU32(datagram.data() + 8, seq);
      if (send(fd, datagram.data(), datagram.size(), 0) < 0) {
        if (errno == EINTR) continue;
        // ECONNREFUSED reports an ICMP error for an earlier datagram (no
        // listener yet or any more): that datagram is simply lost.
        if (errno != ECONNREFUSED) return Fail("send");
        continue;
      }
      state[seq] = State::kInFlight;
      pending.push_back({seq, NowMs() + options.timeout_ms});
      ++in_flight;
      ++next;
    }
    if (in_flight == 0) continue;
    const int64_t wait_ms = std::max<int64_t>(0, pending.front().deadline_ms - NowMs());
    pollfd p{.fd = fd, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, static_cast<int>(wait_ms)) < 0 && errno != EINTR) return Fail("poll");
    while (true) {
      const ssize_t n = recv(fd, reply.data(), reply.size(), MSG_DONTWAIT);
      if (n < 0) {
        if (errno == EAGAIN || errno == EWOULDBLOCK) break;
        if (errno == EINTR || errno == ECONNREFUSED) continue;
        return Fail("recv");
      }
      if (static_cast<size_t>(n) < kHeaderBytes || GetU32(reply.data()) != kMagic ||
          GetU32(reply.data() + 4) != nonce) {
        continue;
      }
      const uint32_t seq = GetU32(reply.data() + 8);
      if (seq >= state.size()) continue;
      if (state[seq] == State::kInFlight) --in_flight;
      if (state[seq] == State::kInFlight || state[seq] == State::kGivenUp) {
        state[seq] = State::kEchoed;
        ++received;
      }
    }
  }
  std::printf("sent %ld received %ld\n", options.count, received);
  std::fflush(stdout);
  close(fd);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 3) return Usage();
  const std::string_view mode = argv[1];
  const std::string_view address_text = argv[2];
  std::vector<std::string_view> args(argv + 3, argv + argc);
  // Returns the value after flag args[i], advancing i; nullopt if missing.
  auto value_of = [&](size_t& i, long min, long max) -> std::optional<long> {
    if (i + 1 >= args.size()) return std::nullopt;
    return ParseNumber(args[++i], min, max);
  };

  if (mode == "serve") {
    const std::optional<sockaddr_in> address = ParseAddress(address_text, false);
    if (!address.has_value()) return Usage();
    long count = 0;
    for (size_t i = 0; i < args.size(); ++i) {
      std::optional<long> value;
      if (args[i] == "--count" && (value = value_of(i, 0, 100'000'000))) {
        count = *value;
      } else {
        return Usage();
      }
    }
    return Serve(*address, count);
  }
  if (mode == "probe") {
    const std::optional<sockaddr_in> address = ParseAddress(address_text, true);
    if (!address.has_value()) return Usage();
    ProbeOptions options;
    for (size_t i = 0; i < args.size(); ++i) {
      std::optional<long> value;
      if (args[i] == "--count" && (value = value_of(i, 1, 10'000'000))) {
        options.count = *value;
      } else if (args[i] == "--window" && (value = value_of(i, 1, 100'000))) {
        options.window = *value;
      } else if (args[i] == "--timeout-ms" && (value = value_of(i, 1, 600'000))) {
        options.timeout_ms = *value;
      } else if (args[i] == "--size" && (value = value_of(i, kHeaderBytes, 65507))) {
        options.size = *value;
      } else if (args[i] == "--dont-fragment") {
        options.dont_fragment = true;
      } else {
        return Usage();
      }
    }
    if (options.count == 0) return Usage();
    return Probe(*address, options);
  }
  return Usage();
}
