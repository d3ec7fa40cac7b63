// Raw kernel sockets playing peers of a TcpMessageTransport in tests.
#include "stream/testing/raw_sockets.h"

#include <arpa/inet.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <chrono>

#include "stream/testing/tcp_harness.h"
#include "wire/stream_frame.h"

namespace wharf::stream::testing {

SilentListener::SilentListener() {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  EXPECT_EQ(bind(fd_, reinterpret_cast<sockaddr*>(&a), sizeof(a)), 0);
  EXPECT_EQ(listen(fd_, 16), 0);
  socklen_t len = sizeof(a);
  getsockname(fd_, reinterpret_cast<sockaddr*>(&a), &len);
  address_ = Loopback4(ntohs(a.sin_port));
}

SilentListener::~SilentListener() {
  if (fd_ >= 0) close(fd_);
}

RawClient::RawClient(const transport::NetAddress& server) {
  fd_ = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
  sockaddr_storage a;
  socklen_t len = static_cast<socklen_t>(server.ToSockaddr(&a));
  EXPECT_EQ(connect(fd_, reinterpret_cast<sockaddr*>(&a), len), 0);
}

void RawClient::Send(std::span<const std::byte> bytes) {
  EXPECT_EQ(send(fd_, bytes.data(), bytes.size(), MSG_NOSIGNAL), static_cast<ssize_t>(bytes.size()));
}

void RawClient::Hello(uint16_t port) {
  std::array<std::byte, wire::kStreamHeaderBytes + wire::kStreamHelloBytes> frame{};
  ASSERT_TRUE(wire::EncodeStreamHeader(
                  {.type = wire::StreamFrameType::kHello, .chunk_length = wire::kStreamHelloBytes},
                  frame)
                  .ok());
  ASSERT_TRUE(wire::EncodeStreamHello({.listen_port = port, .instance_id = 77},
                                      std::span(frame).subspan(wire::kStreamHeaderBytes))
                  .ok());
  Send(frame);
}

void RawClient::RawHeader(uint8_t version, uint8_t type, uint32_t chunk, uint64_t id,
                          uint32_t total, uint32_t offset) {
  std::array<uint8_t, wire::kStreamHeaderBytes> b{};
  b[0] = version;
  b[1] = type;
  auto put32 = [&](size_t at, uint32_t v) {
    for (int i = 0; i < 4; ++i) b[at + i] = static_cast<uint8_t>(v >> (24 - 8 * i));
  };
  put32(4, chunk);
  for (int i = 0; i < 8; ++i) b[8 + i] = static_cast<uint8_t>(id >> (56 - 8 * i));
  put32(16, total);
  put32(20, offset);
  Send(std::as_bytes(std::span(b)));
}

bool RawClient::WaitClosedByServer(int timeout_ms) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  std::array<char, 4096> sink;
  while (std::chrono::steady_clock::now() < until) {
    pollfd p{.fd = fd_, .events = POLLIN, .revents = 0};
    if (poll(&p, 1, 10) <= 0) continue;
    const ssize_t got = recv(fd_, sink.data(), sink.size(), MSG_DONTWAIT);
    if (got == 0 || (got < 0 && errno != EAGAIN && errno != EINTR)) return true;
  }
  return false;
}

void RawClient::Close() {
  if (fd_ < 0) return;
  std::array<char, 4096> sink;
  while (recv(fd_, sink.data(), sink.size(), MSG_DONTWAIT) > 0) {
  }
  close(fd_);
  fd_ = -1;
}

}  // namespace wharf::stream::testing
