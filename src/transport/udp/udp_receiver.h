// transport/udp/udp_receiver.h: UdpReceiver, the receive side of
// UdpDatagram: the receive slots one recvmmsg fills (buffers, headers,
// source addresses, control room), the read window of each socket it reads
// (the main socket and, once open, the hot-peer socket), the cursor that
// hands out the datagrams of the last read one at a time, splitting a
// GRO-coalesced buffer back into its datagrams, and adaptive GRO: switching
// UDP_GRO on both sockets as udp_adaptive_gro.h decides, without misreading
// a coalesced buffer queued across a switch.
//
// It does not own the sockets (UdpDatagram opens and closes both and hands
// the receiver their fds), and holds nothing of the send side or the path
// caches. Receive never allocates: the slots are sized at Open.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "transport/datagram.h"
#include "transport/net_address.h"
#include "transport/udp/udp_adaptive_gro.h"
#include "transport/udp/udp_socket_options.h"
#include "transport/udp/udp_stats.h"
#include "transport/udp/udp_syscalls.h"
#include "wharf/result.h"

namespace wharf::transport::udp {

// What the receiver does with UDP_GRO on the main socket.
enum class GroMode : uint8_t {
  kOff,       // never asked for (or the kernel lacks it)
  kOn,        // on from Open, for good
  kAdaptive,  // off at Open, then as AdaptiveGro says
};

// Owned by its UdpDatagram. Not thread-safe: the datagram's one thread calls
// every method. Borrows `syscalls` and `stats`, which must outlive it; counts
// into `stats`: received, gro_coalesced, truncated, refused (met by reads)
// and the gro_* switches.
class UdpReceiver {
 public:
  // A read of a flood of oversized datagrams only drops; Receive gives up
  // (returns 0) after this many reads in a row that handed out nothing.
  static constexpr int kMaxEmptyReads = 16;
  // Pending ICMP reports met in a row by one read before it gives up.
  static constexpr int kMaxRefusedInRow = 8;
  // With a hot-peer socket, the main socket is read on every this-many-th
  // Receive call that reads (the hot one on every call).
  static constexpr int kMainReadEvery = 4;

  UdpReceiver(UdpSyscalls* syscalls, UdpStats* stats) : syscalls_(*syscalls), stats_(*stats) {}
  UdpReceiver(const UdpReceiver&) = delete;
  UdpReceiver& operator=(const UdpReceiver&) = delete;

  // Starts reading the main socket `fd` (bound to `local`, which errors
  // name): sets UDP_GRO as `gro` says, and sizes `batch` receive slots, each
  // a 64 KiB GRO buffer where GRO may ever be on, else exactly
  // `max_datagram_bytes`, so that a datagram one byte over reads as
  // MSG_TRUNC. Called once, before anything else.
  // `timestamps`: ask the kernel for each datagram's receive time
  // (InDatagram::received_ns), on this and the hot-peer socket.
  void Open(int fd, const NetAddress& local, size_t batch, size_t max_datagram_bytes, GroMode gro,
            bool timestamps = false);
  // Reads the hot-peer socket `fd` too from now on; it was opened with
  // UDP_GRO set to `gro` (gro_for_new_sockets() when it was made).
  void AddHotSocket(int fd, bool gro);

  // UdpDatagram::Receive: up to out.size() datagrams, which point into the
  // slots until the next call. A GRO buffer holding more segments than fit
  // in `out` is finished by the next call(s) before a socket is read again.
  // 0 when nothing is waiting, or after kMaxEmptyReads reads in a row found
  // only oversized datagrams (dropped, counted).
  Result<size_t> Receive(std::span<InDatagram> out);

  // Whether the main socket receives GRO-coalesced buffers now.
  bool gro_enabled() const { return main_.gro; }
  // Whether GRO switches with the load.
  bool gro_adaptive() const { return gro_adaptive_; }
  bool hot_gro_enabled() const { return hot_fd_ >= 0 && hot_.gro; }
  // The UDP_GRO setting a socket opened now should get to match the main
  // one's (a hot-peer socket).
  bool gro_for_new_sockets() const { return gro_for_new_sockets_; }
  // A read (or a GRO switch's peek) met an ICMP-raised errno since
  // ClearPathErrors: the sockets' error queues hold reports.
  bool path_errors_pending() const { return path_errors_pending_; }
  // Whether the kernel stamps what the sockets receive (asked for at Open).
  bool receive_timestamps() const { return timestamps_; }
  void ClearPathErrors() { path_errors_pending_ = false; }

 private:
  // Control-message room for one incoming message, aligned as the kernel's
  // cmsg walker requires.
  struct alignas(cmsghdr) ReceiveControl {
    std::byte bytes[kReceiveControlBytes];
  };
  // Per socket: how many kernel messages the next read asks for
  // (1..batch_), adapted by ReadMessages, and whether UDP_GRO is on for it.
  // One window per socket: the main socket's empty reads must not shrink a
  // busy hot-peer socket's window (under a burst that cut reads to one or
  // two datagrams each, and the protocol's poll to one read).
  struct ReadWindow {
    size_t window = 1;
    int full_single_reads = 0;  // single-message reads in a row that found one
    // Changed only by a setsockopt the kernel accepted, so it is what the
    // kernel does: while true, reads pass a control buffer.
    bool gro = false;
  };

  // Reads the hot-peer socket on every call and the main socket, first, on
  // every kMainReadEvery-th (just the main socket while there is no hot one).
  Result<size_t> ReadAnySocket(size_t count);
  // Reads up to `count` kernel messages into the slots; returns how many
  // (0 when the socket is empty).
  Result<size_t> ReadMessages(int fd, ReadWindow& window, size_t count);
  // Hands out datagrams from the read messages into `out`; returns how many.
  size_t DrainMessages(std::span<InDatagram> out);
  // Prepares the message at next_message_ for draining; false when it is
  // dropped (counted) instead.
  bool OpenMessage();
  // Adaptive GRO: feeds a read of `messages` kernel messages (the front
  // slots) to gro_policy_ and switches as it says.
  void AdaptGro(size_t messages);
  void TurnGroOn();
  void TurnGroOff();
  // setsockopt UDP_GRO on one socket; updates `reads.gro` when accepted.
  bool SetGro(int fd, ReadWindow& reads, bool on);
  // True when `fd` has nothing queued (a peek); notes an ICMP error the
  // peek consumed, as a read would.
  bool QueueEmpty(int fd);

  // Borrowed.
  UdpSyscalls& syscalls_;
  UdpStats& stats_;

  // Set by Open. The sockets are UdpDatagram's; hot_fd_ is -1 until
  // AddHotSocket.
  int fd_ = -1;
  int hot_fd_ = -1;
  NetAddress local_;
  size_t batch_ = 0;
  size_t max_datagram_bytes_ = 0;

  // Adaptive GRO (GroMode::kAdaptive, while the kernel accepts UDP_GRO).
  bool gro_adaptive_ = false;
  AdaptiveGro gro_policy_;
  // UDP_GRO for sockets opened from now on: follows the completed switches
  // (main_.gro may differ for a moment while a switch off is tried).
  bool gro_for_new_sockets_ = false;
  bool path_errors_pending_ = false;
  // Receive timestamps asked for and accepted; then every read passes a
  // control buffer. realtime_to_mono_ns_: CLOCK_MONOTONIC - CLOCK_REALTIME,
  // read at each read that returned messages (the kernel stamps on the
  // realtime clock; the protocol's times are monotonic).
  bool timestamps_ = false;
  int64_t realtime_to_mono_ns_ = 0;
  TimeNs message_received_ns_ = 0;  // of the message being drained

  // Receive slots: slot i is buffers_[i * slot_bytes_] with its iovec,
  // source address and control room; msgs_[i] points at them for good.
  size_t slot_bytes_ = 0;
  std::vector<std::byte> buffers_;
  std::vector<mmsghdr> msgs_;
  std::vector<iovec> iovs_;
  std::vector<sockaddr_storage> addrs_;
  std::vector<ReceiveControl> controls_;
  ReadWindow main_;
  ReadWindow hot_;
  // Receive calls that read since the main socket was last read (with a
  // hot-peer socket).
  int reads_since_main_ = 0;

  // Drain cursor over the last read: messages [next_message_,
  // read_messages_) are not fully handed out; within next_message_ (when
  // message_open_) the next datagram starts at message_offset_, is at most
  // segment_bytes_ long and came from message_from_.
  size_t read_messages_ = 0;
  size_t next_message_ = 0;
  bool message_open_ = false;
  size_t message_offset_ = 0;
  size_t segment_bytes_ = 0;
  NetAddress message_from_;
};

}  // namespace wharf::transport::udp
