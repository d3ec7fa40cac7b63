// transport/udp/udp_test_support.h: what the UdpDatagram tests share:
// loopback addresses per family, opening sockets, numbered payloads, and
// bounded receive/send loops (every wait a poll() with a timeout). Tests only.
#pragma once

#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "transport/udp/udp_datagram.h"

namespace wharf::transport::udp_testing {

// Long enough for a loaded 2-core CI box, short enough to fail fast.
inline constexpr int kPollTimeoutMs = 3000;

enum class Family { kIpv4, kIpv6 };

inline std::string FamilyName(const testing::TestParamInfo<Family>& info) {
  return info.param == Family::kIpv4 ? "Ipv4" : "Ipv6";
}

inline NetAddress Loopback(Family family, uint16_t port = 0) {
  if (family == Family::kIpv4) return NetAddress::Ipv4(0x7F000001, port);
  std::array<uint8_t, 16> ip{};
  ip[15] = 1;
  return NetAddress::Ipv6(ip, port);
}

inline bool Ipv6LoopbackUsable() {
  const int fd = socket(AF_INET6, SOCK_DGRAM, 0);
  if (fd < 0) return false;
  sockaddr_in6 address{};
  address.sin6_family = AF_INET6;
  address.sin6_addr = in6addr_loopback;
  const bool ok = bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0;
  close(fd);
  return ok;
}

inline UdpOptions OptionsFor(Family family) {
  UdpOptions options;
  options.bind = Loopback(family);
  return options;
}

inline std::unique_ptr<UdpDatagram> MustOpen(const UdpOptions& options) {
  Result<std::unique_ptr<UdpDatagram>> opened = UdpDatagram::Open(options);
  EXPECT_TRUE(opened.ok()) << opened.status();
  return opened.ok() ? std::move(opened).value() : nullptr;
}

// Payload i of a test: its index in the first four bytes (as a protocol
// header would identify it) and a pattern after, so that a misplaced or
// corrupted byte shows.
inline std::vector<std::byte> Payload(uint32_t index, size_t size) {
  std::vector<std::byte> bytes(size);
  for (size_t j = 0; j < size; ++j) {
    bytes[j] = static_cast<std::byte>((j < 4 ? (index >> (8 * j)) : (index * 131 + j * 7)) & 0xff);
  }
  return bytes;
}

struct Received {
  NetAddress from;
  std::vector<std::byte> bytes;
  TimeNs received_ns = 0;
};

// Receives until `count` datagrams arrived or a poll waits kPollTimeoutMs in
// vain; `out_slots` is the span size handed to Receive.
inline std::vector<Received> ReceiveUpTo(UdpDatagram& receiver, size_t count, size_t out_slots = 16) {
  std::vector<Received> got;
  std::vector<InDatagram> out(out_slots);
  while (got.size() < count) {
    Result<size_t> n = receiver.Receive(out);
    EXPECT_TRUE(n.ok()) << n.status();
    if (!n.ok()) break;
    for (size_t i = 0; i < *n; ++i) {
      got.push_back(
          Received{out[i].from, {out[i].bytes.begin(), out[i].bytes.end()}, out[i].received_ns});
    }
    if (*n > 0) continue;
    // The hot-peer socket, once open, is as readable as the main one.
    pollfd fds[2] = {{receiver.ReadableFd(), POLLIN, 0}, {receiver.hot_fd(), POLLIN, 0}};
    if (poll(fds, receiver.hot_fd() >= 0 ? 2 : 1, kPollTimeoutMs) <= 0) break;
  }
  return got;
}

// Whether anything arrives within `timeout_ms`.
inline bool Readable(const UdpDatagram& receiver, int timeout_ms) {
  pollfd pfd{receiver.ReadableFd(), POLLIN, 0};
  return poll(&pfd, 1, timeout_ms) == 1 && (pfd.revents & POLLIN) != 0;
}

// Payloads and the OutDatagrams that borrow them.
struct Outgoing {
  std::vector<std::vector<std::byte>> payloads;
  std::vector<OutDatagram> datagrams;
};

inline Outgoing MakeOutgoing(const NetAddress& to, const std::vector<size_t>& sizes,
                      uint8_t priority = 0) {
  Outgoing out;
  for (size_t i = 0; i < sizes.size(); ++i) {
    out.payloads.push_back(Payload(static_cast<uint32_t>(i), sizes[i]));
  }
  for (const auto& payload : out.payloads) {
    out.datagrams.push_back(OutDatagram{to, payload, priority});
  }
  return out;
}

// Sends all of `batch`, retrying the remainder when the socket is full, for
// a bounded number of rounds.
inline void SendAll(UdpDatagram& sender, std::span<const OutDatagram> batch) {
  size_t done = 0;
  for (int round = 0; round < 1000 && done < batch.size(); ++round) {
    Result<size_t> n = sender.Send(batch.subspan(done));
    ASSERT_TRUE(n.ok()) << n.status();
    done += *n;
  }
  ASSERT_EQ(done, batch.size());
}

inline void ExpectSameDatagrams(const std::vector<Received>& got, const Outgoing& sent,
                         const NetAddress& from) {
  ASSERT_EQ(got.size(), sent.payloads.size());
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_EQ(got[i].from, from) << "datagram " << i;
    EXPECT_TRUE(got[i].bytes == sent.payloads[i]) << "datagram " << i << ": " << got[i].bytes.size()
                                                  << " bytes, expected " << sent.payloads[i].size();
  }
}

inline std::vector<size_t> GsoSizes() {
  std::vector<size_t> sizes(40, 1400);
  sizes.push_back(321);
  return sizes;
}

}  // namespace wharf::transport::udp_testing
