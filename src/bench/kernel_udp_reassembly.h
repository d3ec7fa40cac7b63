// bench/kernel_udp_reassembly.h: the wire format of the kernel-udp
// cluster baseline (a message cut into datagrams that fit a 1500-byte MTU
// without IP fragmentation) and UdpReassembler, the table that puts a
// message back together from its datagrams. Pure logic (no sockets), so it
// is tested with an injected time; the transports are kernel_transports.h.
//
// Datagram layout (little-endian), then the payload:
//
//   0       8          12           16
//   +-------+----------+------------+---------------
//   |rpc_id | offset   | total_bytes| payload ...
//   +-------+----------+------------+---------------
//
// rpc_id is chosen by the client (tag in the low 32 bits, a per-transport
// sequence number above), and the server's echo carries it back, so a
// datagram of an abandoned RPC never completes a later one with the same tag.
// Every datagram but the last carries exactly kKernelUdpMaxPayloadBytes, at
// an offset that is a multiple of it; anything else is malformed.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <unordered_map>
#include <vector>

#include "base/clock.h"

namespace wharf::bench {

inline constexpr size_t kKernelUdpHeaderBytes = 16;
// 1500 (Ethernet MTU) - 20 (IPv4 header) - 8 (UDP header).
inline constexpr size_t kKernelUdpMaxDatagramBytes = 1472;
inline constexpr size_t kKernelUdpMaxPayloadBytes =
    kKernelUdpMaxDatagramBytes - kKernelUdpHeaderBytes;
// Larger totals are malformed. 64 MiB, wharf's homa.max_message_bytes: the
// full workloads (--max-message 0) reach 29.4 MB.
inline constexpr uint64_t kKernelUdpMaxMessageBytes = 64 << 20;

struct KernelUdpHeader {
  uint64_t rpc_id = 0;
  uint32_t offset = 0;
  uint32_t total_bytes = 0;
};

// Writes `h` into out[0, kKernelUdpHeaderBytes).
void EncodeKernelUdpHeader(const KernelUdpHeader& h, char* out);
// Reads it back from in[0, kKernelUdpHeaderBytes).
KernelUdpHeader DecodeKernelUdpHeader(const char* in);

// A remote socket address as a fixed-size key (family, port, address).
struct UdpPeerKey {
  std::array<uint8_t, 20> bytes{};
  bool operator==(const UdpPeerKey&) const = default;
};
UdpPeerKey PeerKeyOf(const sockaddr_storage& address);

enum class UdpAddOutcome {
  kPartial,    // stored; the message is not complete yet
  kComplete,   // the message is complete (UdpAddResult says which)
  kDuplicate,  // this datagram was already stored: dropped
  kMalformed,  // header or length inconsistent: dropped
  kTableFull,  // a new message with the table at its cap: dropped
};

struct UdpAddResult {
  UdpAddOutcome outcome = UdpAddOutcome::kMalformed;
  uint64_t rpc_id = 0;
  uint32_t total_bytes = 0;
  // kComplete with keep_payload: the whole message, valid until the next
  // call on the reassembler (or while the datagram passed to Add lives, for
  // a one-datagram message). Empty otherwise.
  std::span<const char> message;
};

// Partial messages keyed by (peer, rpc_id). Owned by one thread; not
// thread-safe. The table is keyed by remote peers, so it is bounded three
// ways: `max_partial` messages, `max_buffered_bytes` of their totals, and an
// idle timeout after which a partial message is dropped (a lost datagram is
// never retransmitted). Every drop is counted. Storing a datagram allocates
// nothing once the slots' buffers have grown; a new large message may
// allocate its buffer.
class UdpReassembler {
 public:
  struct Options {
    size_t max_partial = 4096;
    DurationNs idle_timeout_ns = 1 * kNsPerSec;
    uint64_t max_buffered_bytes = 256ull << 20;  // sum of partial totals (keep_payload only)
    bool keep_payload = true;                    // false: track datagrams only (the client)
  };
  struct Counters {
    uint64_t datagrams = 0;   // offered to Add
    uint64_t completed = 0;   // messages
    uint64_t duplicates = 0;  // datagrams
    uint64_t malformed = 0;   // datagrams
    uint64_t table_full = 0;  // datagrams starting a message, dropped at a cap
    uint64_t expired = 0;     // partial messages dropped after the idle timeout
  };

  explicit UdpReassembler(const Options& options);

  // Takes one datagram (header and payload) from `peer` at time `now`.
  UdpAddResult Add(const UdpPeerKey& peer, std::span<const char> datagram, TimeNs now);
  // Drops (and counts) every partial message idle for the timeout or longer.
  void Expire(TimeNs now);
  // When the next partial message expires; kNever if none.
  TimeNs NextExpiryNs() const;

  size_t partial() const { return index_.size(); }
  const Counters& counters() const { return counters_; }

 private:
  struct Key {
    UdpPeerKey peer;
    uint64_t rpc_id = 0;
    bool operator==(const Key&) const = default;
  };
  struct KeyHash {
    size_t operator()(const Key& k) const;
  };
  struct Slot {
    Key key;
    uint32_t total_bytes = 0;
    uint32_t fragments = 0;
    uint32_t received = 0;
    TimeNs last_ns = 0;
    int prev = -1;  // the idle list, least recently touched first
    int next = -1;
    std::vector<uint64_t> seen;  // one bit per fragment
    std::vector<char> data;      // keep_payload
  };

  int Take(const Key& key, uint32_t total_bytes, TimeNs now);
  void Release(int slot);
  void Unlink(int slot);
  void LinkAtTail(int slot);
  void ShrinkReleased();

  Options options_;
  Counters counters_;
  std::vector<Slot> slots_;
  std::vector<int> free_;
  std::unordered_map<Key, int, KeyHash> index_;
  int head_ = -1;
  int tail_ = -1;
  uint64_t buffered_bytes_ = 0;
  int released_ = -1;  // a slot whose large buffer is freed at the next call
};

}  // namespace wharf::bench
