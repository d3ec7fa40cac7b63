// stream/testing/raw_sockets.h: plain kernel sockets that play a broken or
// hostile peer against a TcpMessageTransport in tests: a listener that never
// answers (the kernel completes handshakes, no process reads) and a blocking
// client that speaks the framing by hand (or not). Test-only.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/net_address.h"

namespace wharf::stream::testing {

// A listening socket on 127.0.0.1 that never accepts or answers: the kernel
// completes the TCP handshake, and then nothing. Like a stopped process.
class SilentListener {
 public:
  SilentListener();
  ~SilentListener();
  SilentListener(const SilentListener&) = delete;
  SilentListener& operator=(const SilentListener&) = delete;
  const transport::NetAddress& address() const { return address_; }

 private:
  int fd_ = -1;
  transport::NetAddress address_;
};

// A plain blocking IPv4 socket connected to `server`.
class RawClient {
 public:
  explicit RawClient(const transport::NetAddress& server);
  ~RawClient() { Close(); }
  RawClient(const RawClient&) = delete;
  RawClient& operator=(const RawClient&) = delete;

  void Send(std::span<const std::byte> bytes);
  // A HELLO declaring `port` as where we listen.
  void Hello(uint16_t port = 9);
  // A header encoded without the codec's checks (for absurd values).
  void RawHeader(uint8_t version, uint8_t type, uint32_t chunk, uint64_t id, uint32_t total,
                 uint32_t offset);
  // Reads (and drops) what the server sent until it closed the connection
  // (true) or `timeout_ms` of real time passed without that (false).
  bool WaitClosedByServer(int timeout_ms);
  // An orderly close: whatever the server sent is read first, so the kernel
  // sends FIN rather than RST and the server sees the end of the stream.
  void Close();

 private:
  int fd_ = -1;
};

}  // namespace wharf::stream::testing
