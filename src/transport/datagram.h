// transport/datagram.h: Datagram, the unreliable packet interface the
// Homa-style protocol runs over. Implementations: udp/ (kernel UDP sockets,
// batched with sendmmsg/recvmmsg and GSO/GRO) and fake/ (FakeNetwork for
// deterministic tests). No protocol logic lives here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "transport/net_address.h"
#include "wharf/result.h"

namespace wharf::transport {

// One datagram to send: `bytes` followed by `payload`, both borrowed for the
// duration of Send(). The split lets a protocol send a header it just wrote
// and message bytes it holds elsewhere without first copying them together
// (a gather send: real transports hand the kernel both pieces).
struct OutDatagram {
  NetAddress to;
  std::span<const std::byte> bytes;
  // 0 (lowest) .. 7 (highest); mapped to DSCP by real transports.
  uint8_t priority = 0;
  std::span<const std::byte> payload = {};

  size_t size() const { return bytes.size() + payload.size(); }
};

// One received datagram. `bytes` points into the transport's receive buffers
// and stays valid only until the next Receive() call on the same transport.
struct InDatagram {
  NetAddress from;
  std::span<const std::byte> bytes;
};

// Owned by whoever opened it (the engine). Not thread-safe: one thread calls
// all methods.
class Datagram {
 public:
  virtual ~Datagram() = default;

  // The address peers send to (with the bound port resolved).
  virtual NetAddress LocalAddress() const = 0;

  // Largest datagram payload this transport sends or receives at all (e.g.
  // MTU 1500 - IP - UDP headers). Protocol packets never exceed it.
  virtual size_t MaxDatagramBytes() const = 0;

  // Largest payload that reaches `to` unfragmented: the path's limit, at most
  // MaxDatagramBytes(). Control path: called once per new peer.
  virtual size_t MaxDatagramBytesTo(const NetAddress& /*to*/) { return MaxDatagramBytes(); }

  // True when datagrams to `to` never leave this host (loopback, or one of
  // this host's own addresses): Send itself delivers them, no NIC queue
  // builds up below the socket, so a sender has nothing to pace. Control
  // path: called once per new peer.
  virtual bool IsLocalPath(const NetAddress& /*to*/) { return false; }

  // Sends a batch in order. Returns how many were accepted; fewer than
  // batch.size() means the socket is full (try the rest later). A datagram
  // whose size() is over MaxDatagramBytes() is an InvalidArgument error.
  virtual Result<size_t> Send(std::span<const OutDatagram> batch) = 0;

  // Non-blocking. Fills up to out.size() entries; returns how many. 0 means
  // nothing is waiting.
  virtual Result<size_t> Receive(std::span<InDatagram> out) = 0;

  // A file descriptor that becomes readable when Receive() has work, for
  // epoll; -1 when the transport has no fd (the fake network).
  virtual int ReadableFd() const = 0;
};

}  // namespace wharf::transport
