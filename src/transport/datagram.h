// transport/datagram.h: Datagram, the unreliable packet interface the
// Homa-style protocol runs over. Implementations: udp/ (kernel UDP sockets,
// batched with sendmmsg/recvmmsg and GSO/GRO) and fake/ (FakeNetwork for
// deterministic tests). No protocol logic lives here.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "base/clock.h"
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
  // Nonzero: asks for the kernel's stamp of this datagram's departure,
  // reported by TakeDepartures with this token, where the transport does
  // transmit timestamps (udp.tx_timestamps); ignored elsewhere. Such a
  // datagram is sent alone (no GSO run).
  uint64_t departure_token = 0;

  size_t size() const { return bytes.size() + payload.size(); }
};

// What the network said about a destination we sent to: an ICMP error the
// kernel reported for it (IP_RECVERR), or the fake network's stand-in. The
// protocol treats the unreachable kinds as the kernel's word that nothing
// listens there any more (docs/protocol.md, "peer death").
struct PathError {
  enum class Kind : uint8_t {
    kPortUnreachable,  // the host answered: no socket on that port
    kHostUnreachable,  // a router (or our own stack, after ARP/ND failed)
    kNetUnreachable,   // no route to the destination's network
    kProhibited,       // administratively prohibited (a firewall said so)
    kOther,            // anything else (e.g. fragmentation needed): advisory
  };
  // The destination of the datagram that drew the report.
  NetAddress to;
  Kind kind = Kind::kOther;
  // The errno the kernel reported (ECONNREFUSED, EHOSTUNREACH, ...), 0 if none.
  int error = 0;
  // Who sent the report (the peer's host, a router); family kNone if unknown.
  NetAddress reporter;

  // True for the kinds that mean the destination cannot be reached now.
  bool unreachable() const { return kind != Kind::kOther; }
  // "port unreachable", "host unreachable", ...
  static const char* KindName(Kind kind) {
    switch (kind) {
      case Kind::kPortUnreachable: return "port unreachable";
      case Kind::kHostUnreachable: return "host unreachable";
      case Kind::kNetUnreachable: return "network unreachable";
      case Kind::kProhibited: return "administratively prohibited";
      case Kind::kOther: break;
    }
    return "path error";
  }
};

// When a datagram sent with a departure_token left: the kernel's software
// transmit stamp (SO_TIMESTAMPING, SOF_TIMESTAMPING_TX_SOFTWARE), moved to
// this process's monotonic clock.
struct Departure {
  uint64_t token = 0;
  TimeNs sent_ns = 0;
};

// One received datagram. `bytes` points into the transport's receive buffers
// and stays valid only until the next Receive() call on the same transport.
struct InDatagram {
  NetAddress from;
  std::span<const std::byte> bytes;
  // When the kernel received it (SO_TIMESTAMPING's software stamp, moved to
  // this process's monotonic clock), where the transport was asked for
  // receive timestamps and the kernel gave one; 0 otherwise.
  TimeNs received_ns = 0;
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
  // MaxDatagramBytes(). Control path: called at most once per peer, when the
  // protocol first sends it DATA; may make system calls.
  virtual size_t MaxDatagramBytesTo(const NetAddress& /*to*/) { return MaxDatagramBytes(); }

  // True when datagrams to `to` never leave this host (loopback, or one of
  // this host's own addresses): Send itself delivers them, no NIC queue
  // builds up below the socket, so a sender has nothing to pace. Answered
  // from a cache (RefreshPaths): no system call, so a flood of new sources
  // costs none.
  virtual bool IsLocalPath(const NetAddress& /*to*/) { return false; }

  // True when datagrams to `to` leave through no wire: a local path, or a
  // software device (a veth pair between network namespaces, a tun): the
  // send call hands them on and no device queue builds below the socket.
  // Control path like MaxDatagramBytesTo (called once per peer; may make
  // system calls, answers are cached).
  virtual bool IsSoftwarePath(const NetAddress& to) { return IsLocalPath(to); }

  // Sends a batch in order. Returns how many were accepted; fewer than
  // batch.size() means the socket is full (try the rest later). A datagram
  // whose size() is over MaxDatagramBytes() is an InvalidArgument error.
  virtual Result<size_t> Send(std::span<const OutDatagram> batch) = 0;

  // Non-blocking. Fills up to out.size() entries; returns how many. 0 means
  // nothing is waiting.
  virtual Result<size_t> Receive(std::span<InDatagram> out) = 0;

  // Moves up to out.size() path errors reported since the last call into
  // `out`; returns how many. Cheap when there are none (no system call: a
  // real transport reads its error queue only after the kernel signalled
  // an error on a send or receive). Call it after Receive().
  virtual size_t TakePathErrors(std::span<PathError> /*out*/) { return 0; }

  // Moves up to out.size() departures reported since the last call into
  // `out`; returns how many. No system call unless stamps were asked for
  // and not all reported yet. Call it before Receive(), so that a
  // departure is known before the answer it drew.
  virtual size_t TakeDepartures(std::span<Departure> /*out*/) { return 0; }

  // Control path, off the per-packet path: re-reads what MaxDatagramBytesTo
  // and IsLocalPath answer from (e.g. the host's interface addresses). The
  // protocol calls it from its timer every few seconds.
  virtual void RefreshPaths() {}

  // A file descriptor that becomes readable when Receive() has work (or
  // reports EPOLLERR when a path error is waiting), for epoll; -1 when the transport has no fd (the fake network).
  virtual int ReadableFd() const = 0;
  // Every fd a waiter must watch: ReadableFd() and any the transport opened
  // since (a connected socket for one hot peer). The list only grows.
  virtual void AppendReadableFds(std::vector<int>* fds) const {
    if (ReadableFd() >= 0) fds->push_back(ReadableFd());
  }
  // The socket's counters ("udp.sent", ...), for the host's statistics.
  virtual void AppendCounters(std::vector<std::pair<std::string, uint64_t>>* /*out*/) const {}
};

}  // namespace wharf::transport
