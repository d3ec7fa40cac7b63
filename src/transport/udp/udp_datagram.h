// transport/udp/udp_datagram.h: UdpDatagram, the Datagram implementation over
// a kernel UDP socket. Sends are batched with sendmmsg and, where the kernel
// allows, coalesced with UDP GSO; receives are batched with recvmmsg and, with
// UDP GRO, split back into datagrams. Priority travels as DSCP.
//
// UdpDatagram opens the socket and owns the send side; its parts hold the
// rest: UdpReceiver (udp_receiver.h) the receive slots, the read windows and
// adaptive GRO; UdpPathTable (udp_path_table.h) what is known about each
// destination's path; udp_hot_peer.h the hot-peer socket's rules. The
// socket-option probes and cmsg encoding live in udp_socket_options.h, the
// GSO grouping rules in udp_gso_plan.h, the copy of a bulk run into one piece
// in udp_gso_staging.h, the GRO switching rule in udp_adaptive_gro.h,
// address conversions in udp_addresses.h. docs/transports.md explains the
// choices.
#pragma once

#include <sys/socket.h>

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <vector>

#include "transport/datagram.h"
#include "transport/net_address.h"
#include "transport/udp/udp_departures.h"
#include "transport/udp/udp_gso_plan.h"
#include "transport/udp/udp_gso_staging.h"
#include "transport/udp/udp_hot_peer.h"
#include "transport/udp/udp_path_table.h"
#include "transport/udp/udp_receiver.h"
#include "transport/udp/udp_socket_options.h"
#include "transport/udp/udp_stats.h"
#include "transport/udp/udp_syscalls.h"
#include "wharf/result.h"

namespace wharf::transport {

// What UDP GRO does on a socket bound to a loopback address
// (UdpOptions::loopback_gro; configuration key udp.gro_loopback).
enum class LoopbackGro : uint8_t {
  // Off while reads find lone datagrams, on while they find queues
  // (udp_adaptive_gro.h).
  kAdaptive,
  // On, like a socket bound to any other address.
  kAlways,
  // Off.
  kNever,
};

struct UdpOptions {
  // Where to bind; port 0 picks an ephemeral port. The socket's family (IPv4
  // or IPv6) is the family of this address.
  NetAddress bind;
  // IPv6 only. True (the default) keeps the socket to IPv6 peers, so that
  // one socket speaks one family and addresses never change shape. False
  // makes an IPv6 wildcard socket also serve IPv4: IPv4 peers then appear as
  // plain IPv4 NetAddresses (never ::ffff:a.b.c.d) and Send accepts IPv4
  // destinations.
  bool ipv6_only = true;
  // Requested socket buffer sizes in bytes; 0 keeps the kernel default.
  // Large enough by default to absorb a burst of unscheduled data from many
  // senders at once. As root the request bypasses net.core.[rw]mem_max.
  int recv_buffer_bytes = 4 << 20;
  int send_buffer_bytes = 4 << 20;
  // Largest MTU to use; MaxDatagramBytes() is this minus the IP (20 or 40)
  // and UDP (8) headers. Towards each destination the route's own MTU
  // applies when smaller (MaxDatagramBytesTo), so the default lets loopback
  // use 64 KiB datagrams and a 1500-byte Ethernet path 1472-byte ones.
  // IPv4: 68..65535, IPv6: 1280..65535.
  size_t mtu = 65535;
  // Use UDP GSO / GRO when the kernel supports them (probed at Open).
  // enable_gro false means never; true means always on a socket bound to a
  // wildcard or interface address, and what loopback_gro says on one bound
  // to a loopback address.
  bool enable_gso = true;
  bool enable_gro = true;
  // A socket bound to a loopback address hears only senders on this host.
  // With GRO every read must carry a control message (recvmsg instead of
  // recvfrom, about 0.3-0.5 us more per round trip here), which a lone RPC
  // in flight pays for nothing; under load GRO takes a sender's GSO run in
  // one read, which more than doubles throughput. Adaptive (the default)
  // switches between the two as the reads go.
  LoopbackGro loopback_gro = LoopbackGro::kAdaptive;
  // Most messages per sendmmsg / recvmmsg call, 1..1024. When GRO can be on
  // (always or adaptive), each receive slot holds a 64 KiB buffer, so this
  // also sizes that memory.
  size_t batch = 32;
  // Ask the kernel for each datagram's software receive time
  // (InDatagram::received_ns): for measuring, as wharfd's mesh prober does.
  // Costs a control message per read datagram.
  bool rx_timestamps = false;
  // Ask the kernel for the software transmit stamp of each datagram sent
  // with a departure_token (TakeDepartures): for measuring, as the mesh
  // prober's probes do. Costs an error-queue read per stamped datagram;
  // datagrams without a token pay nothing.
  bool tx_timestamps = false;
  // The priority (0..7) most datagrams carry. The socket is marked with it,
  // so only datagrams of other priorities need a per-packet control
  // message. The protocol sends short messages and all control packets at
  // 7, the latency-critical case.
  uint8_t default_priority = 7;
  // Open a second socket, connected to the first peer that receives
  // kHotAfterSends single-datagram sends in a row, sharing this socket's
  // port (udp_hot_peer.h). Sends to that peer skip the kernel's per-packet
  // route lookup. One per socket, kept until it closes, and connected to
  // another peer once that one has such a run while the hot peer has had
  // no send for kHandOverAfterIdleSends: an endpoint that mostly talks to
  // one peer at a time gains; one that serves many at once pays an extra
  // empty read on most polls once some peer became hot, and its other
  // peers' datagrams wait up to kMainReadEvery - 1 polls longer.
  bool hot_peer_socket = true;
  // A GSO send of at least this many bytes whose datagrams' headers and
  // payloads lie apart is first copied into one buffer, so that the kernel
  // copies one iovec instead of two per datagram (udp_gso_staging.h). 0
  // never copies. The default leaves batches of short RPCs alone.
  size_t gso_copy_min_bytes = 8 << 10;
  // Borrowed; null means the real system calls. For failure injection in
  // tests; must outlive the UdpDatagram.
  udp::UdpSyscalls* syscalls = nullptr;
};

// Owned by whoever opened it (the engine); closes its socket on
// destruction. Not thread-safe: one thread calls every method.
class UdpDatagram final : public Datagram {
 public:
  static Result<std::unique_ptr<UdpDatagram>> Open(const UdpOptions& options);

  ~UdpDatagram() override;
  UdpDatagram(const UdpDatagram&) = delete;
  UdpDatagram& operator=(const UdpDatagram&) = delete;

  NetAddress LocalAddress() const override { return local_; }
  size_t MaxDatagramBytes() const override { return max_datagram_bytes_; }
  // Validates the whole batch first (size, priority 0..7, destination family
  // and port), so an InvalidArgument means nothing was sent. Then returns
  // how many datagrams the kernel took: fewer than batch.size() when the
  // socket buffer is full. Datagrams dropped for an unreachable destination
  // count as taken (see UdpStats::send_dropped).
  Result<size_t> Send(std::span<const OutDatagram> batch) override;
  // Returns up to out.size() datagrams. A GRO buffer holding more segments
  // than fit in `out` is finished by the next call(s) before the socket is
  // read again. 0 means nothing is waiting, or that 16 reads in a row found
  // only oversized datagrams (dropped, counted); the fd then stays readable,
  // so wait on it level-triggered.
  Result<size_t> Receive(std::span<InDatagram> out) override { return receiver_.Receive(out); }
  int ReadableFd() const override { return fd_; }
  // The hot-peer socket's fd (-1 until one is open). Readable like
  // ReadableFd(): whoever waits on that must wait on this too. Once open it
  // stays open, with the same fd, until the UdpDatagram is destroyed (a new
  // hot peer gets the same socket, connected again).
  int hot_fd() const { return hot_fd_; }
  // The peer the hot-peer socket is connected to (meaningless while
  // hot_fd() is -1).
  const NetAddress& hot_peer() const { return hot_peer_; }
  // Single-datagram sends in a row to one peer that make it the hot peer.
  static constexpr size_t kHotAfterSends = 32;
  // Single-datagram sends to others, none to the hot peer, after which
  // another peer's run of kHotAfterSends takes the socket over. About a
  // millisecond of a busy server's sends: long enough that clients served
  // in turns keep the socket where it is, short next to a client's life.
  static constexpr size_t kHandOverAfterIdleSends = 1024;
  // The route's MTU towards `to`, capped by UdpOptions::mtu: for a local
  // path the loopback route's (read by RefreshPaths); otherwise asked of the
  // kernel once per destination IP through a connected probe socket and
  // kept in a cache of at most kMaxPathCacheEntries IPs.
  size_t MaxDatagramBytesTo(const NetAddress& to) override { return paths_.MaxDatagramBytesTo(to); }
  static constexpr size_t kMaxPathCacheEntries = udp::UdpPathTable::kMaxCacheEntries;
  // Loopback addresses and this host's own interface addresses, from the
  // list RefreshPaths read: no system call.
  bool IsLocalPath(const NetAddress& to) override { return paths_.IsLocal(to); }
  // Local paths, and remote ones whose route leaves from an address of a
  // software interface (udp_egress_device.h), found with the same cached
  // probe as MaxDatagramBytesTo.
  bool IsSoftwarePath(const NetAddress& to) override { return paths_.IsSoftware(to); }
  // Re-reads the host's interface addresses and the loopback route's MTU
  // (getifaddrs and a probe socket); done at Open.
  void RefreshPaths() override { paths_.Refresh(); }
  // The ICMP reports waiting on the main and hot-peer sockets' error queues
  // (IP_RECVERR is set on both). Reads the queues only after a send or
  // receive met the error the kernel raises alongside each report, so it is
  // free while there are none.
  size_t TakePathErrors(std::span<PathError> out) override;
  // The transmit stamps of datagrams sent with a departure_token, with
  // UdpOptions::tx_timestamps (none without). Reads the error queue of a
  // socket that still owes stamps; ICMP reports met there wait for
  // TakePathErrors.
  size_t TakeDepartures(std::span<Departure> out) override;

  // Whether sends currently coalesce with GSO (probed at Open; turns false
  // if the kernel later rejects a GSO send).
  bool gso_enabled() const { return gso_; }
  // Whether the socket receives GRO-coalesced buffers now.
  bool gro_enabled() const { return receiver_.gro_enabled(); }
  // Whether GRO switches with the load (LoopbackGro::kAdaptive on a
  // loopback socket, while the kernel accepts UDP_GRO).
  bool gro_adaptive() const { return receiver_.gro_adaptive(); }
  // Whether the hot-peer socket is open with GRO on.
  bool hot_gro_enabled() const { return receiver_.hot_gro_enabled(); }
  // Buffer sizes as the kernel reports them (about twice the request, see
  // udp::SetBufferBytes); 0 when the option asked for the default.
  int recv_buffer_bytes() const { return recv_buffer_bytes_; }
  int send_buffer_bytes() const { return send_buffer_bytes_; }
  const UdpStats& stats() const { return stats_; }
  // The main socket, then the hot-peer socket once it is open.
  void AppendReadableFds(std::vector<int>* fds) const override {
    fds->push_back(fd_);
    if (hot_fd_ >= 0) fds->push_back(hot_fd_);
  }
  void AppendCounters(std::vector<std::pair<std::string, uint64_t>>* out) const override;

 private:
  // Control-message room for one outgoing message, aligned as the kernel's
  // cmsg walker requires.
  struct alignas(cmsghdr) SendControl {
    std::byte bytes[udp::kSendControlBytes];
  };

  UdpDatagram(int fd, const UdpOptions& options);

  Status Configure(const UdpOptions& options);
  Status CheckBatch(std::span<const OutDatagram> batch) const;
  // Fills send_msgs_ with up to batch_ messages for the front of `rest`;
  // returns how many.
  size_t PlanMessages(std::span<const OutDatagram> rest);
  // The first `sent` messages of send_msgs_ went out (on the hot-peer
  // socket when `hot`): those that asked for a stamp are owed one.
  void NoteStamped(size_t sent, bool hot);
  // Reads `fd`'s error queue for the stamps `socket` owes.
  void ReadDepartures(int fd, udp::DepartureStamps::Socket socket);
  // A stamp read from `socket`'s error queue: to the monotonic clock, then
  // to departures_. Uses stamp_offset_ns_, which a read sets first
  // (udp::RealtimeToMonotonicNs).
  void OnTransmitStamp(udp::DepartureStamps::Socket socket, const udp::TransmitStamp& stamp);
  // Makes `to` the hot peer: opens the hot-peer socket connected to it, or
  // connects the open one to it instead of the old peer. A failure is
  // counted; after three to open, none is tried again.
  void MakeHot(const NetAddress& to);

  // Constant after Open.
  const int fd_;
  // Borrowed; see UdpOptions::syscalls.
  udp::UdpSyscalls* const syscalls_;
  const size_t batch_;
  const size_t mtu_;
  const bool ipv6_;
  // IPv6 socket that also serves IPv4 (UdpOptions::ipv6_only false).
  const bool dual_stack_;
  const udp::GsoLimits gso_limits_;
  NetAddress local_;
  size_t max_datagram_bytes_ = 0;
  // The TOS byte the socket puts on packets with an IPv4 / IPv6 header when
  // no control message overrides it (UdpOptions::default_priority, if the
  // kernel accepted it).
  int socket_tos_v4_ = 0;
  int socket_tos_v6_ = 0;
  int recv_buffer_bytes_ = 0;
  int send_buffer_bytes_ = 0;

  // Counters; the parts below count into it too.
  UdpStats stats_;
  udp::UdpPathTable paths_{&stats_};
  udp::UdpReceiver receiver_;

  // Set when a send failed with an ICMP-raised errno: the error queues hold
  // reports for TakePathErrors (the receiver notes its own).
  bool path_errors_pending_ = false;
  // Transmit stamps (UdpOptions::tx_timestamps; off when the kernel
  // refused them), and ICMP reports their error-queue reads met, kept for
  // TakePathErrors (at most kStashedPathErrors; the rest stay queued).
  bool tx_timestamps_ = false;
  // Made only with tx_timestamps_ (12 KiB that other sockets do not pay).
  std::unique_ptr<udp::DepartureStamps> departures_;
  int64_t stamp_offset_ns_ = 0;
  static constexpr size_t kStashedPathErrors = 8;
  std::array<PathError, kStashedPathErrors> stashed_path_errors_;
  size_t stashed_count_ = 0;
  // Whether sends coalesce with GSO now.
  bool gso_ = false;
  // Set after a GSO send was rejected: the next attempt goes out plain, and
  // if that works GSO is turned off for good.
  bool retry_plain_ = false;

  // The hot-peer socket (udp_hot_peer.h): -1 until open; owned (closed with
  // the datagram), and read by receiver_ too.
  bool hot_enabled_ = false;
  udp::HotPeerTracker hot_tracker_{kHotAfterSends, kHandOverAfterIdleSends};
  udp::HotSocketSetup hot_setup_;
  int hot_fd_ = -1;
  NetAddress hot_peer_;
  bool hot_stamps_ = false;  // transmit stamps on the hot-peer socket

  // Send scratch, sized at Open so that Send never allocates. Message i uses
  // send_iovs_[i * 2 * max_segments ...] (two per datagram: its bytes and its
  // payload), send_addrs_[i], send_controls_[i] and carries send_runs_[i]
  // datagrams; send_staged_[i] says whether its parts were copied into
  // gso_staging_.
  std::vector<mmsghdr> send_msgs_;
  std::vector<iovec> send_iovs_;
  std::vector<sockaddr_storage> send_addrs_;
  std::vector<SendControl> send_controls_;
  std::vector<size_t> send_runs_;
  std::vector<uint64_t> send_tokens_;  // message i's departure_token (0: none)
  std::vector<uint8_t> send_staged_;
  udp::GsoStaging gso_staging_;
};

}  // namespace wharf::transport
