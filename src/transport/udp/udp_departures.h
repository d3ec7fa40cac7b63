// transport/udp/udp_departures.h: DepartureStamps, which datagram a kernel
// transmit stamp belongs to. A datagram sent with a departure token asks,
// in its own control message, for a software transmit stamp
// (SOF_TIMESTAMPING_TX_SOFTWARE); with SOF_TIMESTAMPING_OPT_ID on the
// socket the kernel numbers the stamped sends of each socket 0, 1, 2, ...
// and reports each stamp in the socket's error queue with that number
// (OPT_TSONLY: without a copy of the packet). This class keeps, per socket,
// which token each number stands for, and the stamps reported and not yet
// taken. No system calls: udp_datagram.cc sends and reads the error queue
// (ReadPathErrors hands it the stamps it finds there).
//
// Bounded: at most kMaxOutstanding stamps awaited per socket and as many
// ready; a stamp the kernel never reports (a packet dropped below the
// socket) is given up after kGiveUpNs. Each such loss is counted.
#pragma once

#include <sys/socket.h>

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <vector>

#include "base/clock.h"
#include "transport/datagram.h"

namespace wharf::transport::udp {

// The key and software stamp (CLOCK_REALTIME ns) of one error-queue
// message, when it is a transmit stamp; nullopt for anything else (an ICMP
// report).
struct TransmitStamp {
  uint32_t key = 0;
  int64_t realtime_ns = 0;
};
std::optional<TransmitStamp> ParseTransmitStamp(const msghdr& msg);

class DepartureStamps {
 public:
  enum class Socket : uint8_t { kMain = 0, kHot = 1 };
  static constexpr size_t kMaxOutstanding = 256;
  static constexpr DurationNs kGiveUpNs = kNsPerSec;

  struct Counters {
    uint64_t reported = 0;  // stamps matched to their token
    uint64_t lost = 0;      // given up, overwritten, unmatched or dropped when full
  };

  // A datagram carrying `token` was accepted by the kernel on `socket` at
  // `now_ns` (monotonic), with a stamp asked for: it got the next number.
  void NoteSent(Socket socket, uint64_t token, TimeNs now_ns);
  // The kernel's stamp for number `key` on `socket`, already moved to the
  // monotonic clock.
  void OnStamp(Socket socket, uint32_t key, TimeNs sent_ns);
  // A new socket takes `socket`'s place: its numbers start again at 0, and
  // what the old one still owed is lost.
  void ResetSocket(Socket socket);
  // Gives up on stamps awaited since before now_ns - kGiveUpNs.
  void Expire(TimeNs now_ns);

  // Whether `socket` owes stamps (its error queue is worth a read).
  bool awaiting(Socket socket) const { return sockets_[Index(socket)].awaiting > 0; }
  bool awaiting_any() const { return awaiting(Socket::kMain) || awaiting(Socket::kHot); }
  // Moves up to out.size() reported departures into `out`, oldest first.
  size_t Take(std::span<Departure> out);
  const Counters& counters() const { return counters_; }

 private:
  struct Slot {
    uint64_t token = 0;
    uint32_t key = 0;
    bool awaited = false;
    TimeNs sent_ns = 0;  // when NoteSent saw it (for Expire)
  };
  struct PerSocket {
    std::array<Slot, kMaxOutstanding> slots{};
    uint32_t next_key = 0;
    size_t awaiting = 0;
    TimeNs oldest_ns = kNever;  // a bound on the oldest awaited NoteSent
  };
  static size_t Index(Socket s) { return static_cast<size_t>(s); }

  std::array<PerSocket, 2> sockets_{};
  std::vector<Departure> ready_;  // at most kMaxOutstanding
  size_t ready_head_ = 0;
  Counters counters_;
};

}  // namespace wharf::transport::udp
