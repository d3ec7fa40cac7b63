// UdpDatagram: opening the socket, batched GSO sends, the hot-peer socket
// and path errors. Receiving is UdpReceiver's, paths UdpPathTable's.
#include "transport/udp/udp_datagram.h"

#include <netinet/in.h>
#include <netinet/udp.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

#include "transport/udp/udp_addresses.h"
#include "transport/udp/udp_path_errors.h"

namespace wharf::transport {
namespace {

constexpr size_t kUdpHeaderBytes = 8;
constexpr size_t kMaxUdpPayloadBytes = 65507;  // 65535 - 20 (IPv4) - 8 (UDP)
// UIO_MAXIOV: the kernel caps a sendmmsg/recvmmsg vector at this many.
constexpr size_t kMaxBatch = 1024;
constexpr uint8_t kMaxPriority = 7;
// A datagram goes out as up to two iovecs: its header part and its payload.
constexpr size_t kIovsPerDatagram = 2;
// Each ECONNREFUSED consumes one pending ICMP report; more in a row than
// this means reports keep arriving faster than we send, so the datagram at
// the front is dropped rather than spinning.
constexpr int kMaxRefusedInRow = 8;

bool IsFullSocket(int err) { return err == EAGAIN || err == EWOULDBLOCK || err == ENOBUFS; }

// Errors that concern the destination of the message that met them, not the
// socket: the datagram is undeliverable, so it is dropped like a lost packet
// and the rest of the batch goes on.
bool IsDestinationError(int err) {
  return err == EHOSTUNREACH || err == ENETUNREACH || err == EHOSTDOWN || err == ENETDOWN ||
         err == EPERM || err == EACCES;
}

// What a kernel or device without working UDP GSO answers to a GSO send
// (EIO: no checksum offload on the route; EINVAL: segment larger than the
// path MTU, or checksums off; EMSGSIZE: the coalesced size).
bool IsGsoRejection(int err) { return err == EIO || err == EINVAL || err == EMSGSIZE; }

TimeNs MonotonicNow() {
  timespec ts{};
  ::clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * kNsPerSec + ts.tv_nsec;
}

}  // namespace

UdpDatagram::UdpDatagram(int fd, const UdpOptions& options)
    : fd_(fd),
      syscalls_(options.syscalls != nullptr ? options.syscalls : &udp::UdpSyscalls::Kernel()),
      batch_(options.batch),
      mtu_(options.mtu),
      ipv6_(options.bind.is_v6()),
      dual_stack_(options.bind.is_v6() && !options.ipv6_only),
      gso_limits_(),
      receiver_(syscalls_, &stats_),
      gso_staging_(options.gso_copy_min_bytes) {}

UdpDatagram::~UdpDatagram() {
  close(fd_);
  if (hot_fd_ >= 0) close(hot_fd_);
}

size_t UdpDatagram::TakePathErrors(std::span<PathError> out) {
  if (stashed_count_ > 0 && !out.empty()) {
    const size_t n = std::min(out.size(), stashed_count_);
    std::copy_n(stashed_path_errors_.begin(), n, out.begin());
    std::copy(stashed_path_errors_.begin() + static_cast<std::ptrdiff_t>(n),
              stashed_path_errors_.begin() + static_cast<std::ptrdiff_t>(stashed_count_),
              stashed_path_errors_.begin());
    stashed_count_ -= n;
    stats_.path_errors += n;
    return n;
  }
  if (!(path_errors_pending_ || receiver_.path_errors_pending()) || out.empty()) return 0;
  bool more_main = false;
  bool more_hot = false;
  // Stamps met on the way are kept too (a stamp read here is read once).
  auto on_main = [this](const udp::TransmitStamp& s) {
    OnTransmitStamp(udp::DepartureStamps::Socket::kMain, s);
    return true;
  };
  auto on_hot = [this](const udp::TransmitStamp& s) {
    OnTransmitStamp(udp::DepartureStamps::Socket::kHot, s);
    return true;
  };
  if (tx_timestamps_) stamp_offset_ns_ = udp::RealtimeToMonotonicNs();
  size_t n = udp::ReadPathErrors(fd_, out, &more_main, on_main);
  if (hot_fd_ >= 0) n += udp::ReadPathErrors(hot_fd_, out.subspan(n), &more_hot, on_hot);
  path_errors_pending_ = more_main || more_hot;
  receiver_.ClearPathErrors();
  stats_.path_errors += n;
  return n;
}

size_t UdpDatagram::TakeDepartures(std::span<Departure> out) {
  if (departures_ == nullptr) return 0;
  if (departures_->awaiting_any()) {
    stamp_offset_ns_ = udp::RealtimeToMonotonicNs();
    departures_->Expire(MonotonicNow());
    if (departures_->awaiting(udp::DepartureStamps::Socket::kMain)) {
      ReadDepartures(fd_, udp::DepartureStamps::Socket::kMain);
    }
    if (hot_fd_ >= 0 && departures_->awaiting(udp::DepartureStamps::Socket::kHot)) {
      ReadDepartures(hot_fd_, udp::DepartureStamps::Socket::kHot);
    }
  }
  return departures_->Take(out);
}

void UdpDatagram::NoteStamped(size_t sent, bool hot) {
  const auto socket = hot ? udp::DepartureStamps::Socket::kHot : udp::DepartureStamps::Socket::kMain;
  TimeNs now = 0;
  for (size_t i = 0; i < sent; ++i) {
    if (send_tokens_[i] == 0) continue;
    if (now == 0) now = MonotonicNow();
    departures_->NoteSent(socket, send_tokens_[i], now);
  }
}

void UdpDatagram::ReadDepartures(int fd, udp::DepartureStamps::Socket socket) {
  std::span<PathError> room(stashed_path_errors_.data() + stashed_count_,
                            kStashedPathErrors - stashed_count_);
  bool more = false;
  // Reading stops once the socket owes nothing more: the read that would
  // only find the queue empty costs as much as one that finds a stamp.
  stashed_count_ += udp::ReadPathErrors(fd, room, &more, [&](const udp::TransmitStamp& s) {
    OnTransmitStamp(socket, s);
    return departures_->awaiting(socket);
  });
  // Reports left in the queue behind a full stash are read later. One left
  // behind the last stamp awaited needs no flag: the kernel raises each
  // report on the socket too (the error the next send or receive meets).
  if (more && stashed_count_ == kStashedPathErrors) path_errors_pending_ = true;
}

void UdpDatagram::OnTransmitStamp(udp::DepartureStamps::Socket socket,
                                  const udp::TransmitStamp& stamp) {
  // Without transmit stamps on nothing is owed, and a stamp read is dropped.
  if (departures_ != nullptr) {
    departures_->OnStamp(socket, stamp.key, stamp.realtime_ns + stamp_offset_ns_);
  }
}

Result<std::unique_ptr<UdpDatagram>> UdpDatagram::Open(const UdpOptions& options) {
  const NetAddress& bind_address = options.bind;
  const std::string where = "UDP socket on " + bind_address.ToString();
  if (bind_address.family() == NetAddress::Family::kNone) {
    return InvalidArgumentError("UDP socket: no bind address given (UdpOptions::bind)");
  }
  const bool v6 = bind_address.is_v6();
  const size_t min_mtu = v6 ? 1280 : 68;
  if (options.mtu < min_mtu || options.mtu > 65535) {
    return InvalidArgumentError(where + ": mtu " + std::to_string(options.mtu) + " is outside " +
                                std::to_string(min_mtu) + "..65535");
  }
  if (options.default_priority > kMaxPriority) {
    return InvalidArgumentError(where + ": default_priority " +
                                std::to_string(options.default_priority) + " is outside 0..7");
  }
  if (options.batch == 0 || options.batch > kMaxBatch) {
    return InvalidArgumentError(where + ": batch " + std::to_string(options.batch) +
                                " is outside 1.." + std::to_string(kMaxBatch));
  }
  if (options.recv_buffer_bytes < 0 || options.send_buffer_bytes < 0) {
    return InvalidArgumentError(where + ": socket buffer sizes must not be negative");
  }

  const int fd =
      socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_NONBLOCK | SOCK_CLOEXEC, IPPROTO_UDP);
  if (fd < 0) return ErrnoToStatus(errno, "socket for " + bind_address.ToString());
  // From here the object owns fd, so every early return closes it.
  std::unique_ptr<UdpDatagram> self(new UdpDatagram(fd, options));
  WHARF_RETURN_IF_ERROR(self->Configure(options));
  return self;
}

Status UdpDatagram::Configure(const UdpOptions& options) {
  const NetAddress& bind_address = options.bind;
  const std::string where = "UDP socket on " + bind_address.ToString();
  if (ipv6_) {
    // Set explicitly: the default follows net.ipv6.bindv6only, which varies.
    const int only = dual_stack_ ? 0 : 1;
    if (setsockopt(fd_, IPPROTO_IPV6, IPV6_V6ONLY, &only, sizeof(only)) != 0) {
      return ErrnoToStatus(errno, where + ": setsockopt IPV6_V6ONLY");
    }
  }
  if (options.recv_buffer_bytes > 0) {
    Result<int> size =
        udp::SetBufferBytes(fd_, udp::BufferKind::kReceive, options.recv_buffer_bytes);
    if (!size.ok()) return size.status().WithContext(where);
    recv_buffer_bytes_ = *size;
  }
  if (options.send_buffer_bytes > 0) {
    Result<int> size = udp::SetBufferBytes(fd_, udp::BufferKind::kSend, options.send_buffer_bytes);
    if (!size.ok()) return size.status().WithContext(where);
    send_buffer_bytes_ = *size;
  }

  sockaddr_storage address;
  if (options.hot_peer_socket) {
    // The hot-peer socket will share the port, which takes SO_REUSEPORT on
    // both; the port must still be ours alone.
    WHARF_RETURN_IF_ERROR(udp::BindExclusiveReusePort(fd_, bind_address, !dual_stack_));
  } else {
    const auto address_len = static_cast<socklen_t>(bind_address.ToSockaddr(&address));
    if (bind(fd_, reinterpret_cast<const sockaddr*>(&address), address_len) != 0) {
      return ErrnoToStatus(errno, "bind " + bind_address.ToString());
    }
  }
  socklen_t bound_len = sizeof(address);
  if (getsockname(fd_, reinterpret_cast<sockaddr*>(&address), &bound_len) != 0) {
    return ErrnoToStatus(errno, where + ": getsockname");
  }
  WHARF_ASSIGN_OR_RETURN(local_, udp::FromKernelAddress(address, bound_len));

  const size_t ip_header_bytes = ipv6_ ? 40 : 20;
  max_datagram_bytes_ =
      std::min(options.mtu - ip_header_bytes - kUdpHeaderBytes, kMaxUdpPayloadBytes);
  gso_ = options.enable_gso && udp::ProbeGso(fd_);
  udp::GroMode gro = udp::GroMode::kOff;
  if (options.enable_gro) {
    const LoopbackGro mode =
        udp::IsLoopbackIp(local_) ? options.loopback_gro : LoopbackGro::kAlways;
    if (mode == LoopbackGro::kAlways) gro = udp::GroMode::kOn;
    if (mode == LoopbackGro::kAdaptive) gro = udp::GroMode::kAdaptive;
  }
  receiver_.Open(fd_, local_, batch_, max_datagram_bytes_, gro, options.rx_timestamps);
  // Receive stamps, if the receiver has them, stay on: one option holds both.
  tx_timestamps_ = options.tx_timestamps &&
                   udp::EnableTimestamps(fd_, receiver_.receive_timestamps(), true);
  if (tx_timestamps_) departures_ = std::make_unique<udp::DepartureStamps>();
  const auto default_tos = static_cast<uint8_t>(options.default_priority << 5);
  // A v6 socket sends IPv4 packets (dual stack) with its IP_TOS.
  if ((!ipv6_ || dual_stack_) && udp::SetSocketTos(fd_, true, default_tos)) {
    socket_tos_v4_ = default_tos;
  }
  if (ipv6_ && udp::SetSocketTos(fd_, false, default_tos)) socket_tos_v6_ = default_tos;
  // Best effort: without it packets are still sent, at a little more cost.
  (void)udp::SetDontFragment(fd_, ipv6_);
  // Best effort too: without it a dead peer is noticed only by its silence.
  (void)udp::EnableRecvErr(fd_, ipv6_, dual_stack_);
  paths_.Open(fd_, max_datagram_bytes_, /*ipv6_only=*/ipv6_ && !dual_stack_);
  hot_enabled_ = options.hot_peer_socket;
  hot_setup_ = {.local = local_,
                .ipv6 = ipv6_,
                .dual_stack = dual_stack_,
                .recv_buffer_bytes = options.recv_buffer_bytes,
                .send_buffer_bytes = options.send_buffer_bytes,
                .gro = receiver_.gro_for_new_sockets(),
                .tos_v4 = socket_tos_v4_,
                .tos_v6 = socket_tos_v6_};

  send_msgs_.resize(batch_);
  send_iovs_.resize(batch_ * kIovsPerDatagram * gso_limits_.max_segments);
  send_addrs_.resize(batch_);
  send_controls_.resize(batch_);
  send_runs_.resize(batch_);
  send_tokens_.resize(batch_);
  send_staged_.resize(batch_);
  return OkStatus();
}

Status UdpDatagram::CheckBatch(std::span<const OutDatagram> batch) const {
  for (size_t i = 0; i < batch.size(); ++i) {
    const OutDatagram& d = batch[i];
    if (d.size() > max_datagram_bytes_) {
      return InvalidArgumentError("datagram " + std::to_string(i) + " to " + d.to.ToString() +
                                  " is " + std::to_string(d.size()) + " bytes, over the " +
                                  std::to_string(max_datagram_bytes_) + "-byte limit (mtu " +
                                  std::to_string(mtu_) + ") of " + local_.ToString());
    }
    if (d.priority > kMaxPriority) {
      return InvalidArgumentError("datagram " + std::to_string(i) + " to " + d.to.ToString() +
                                  ": priority " + std::to_string(d.priority) + " is outside 0..7");
    }
    const bool family_ok = ipv6_ ? (d.to.is_v6() || (dual_stack_ && d.to.is_v4())) : d.to.is_v4();
    if (!family_ok) {
      return InvalidArgumentError("datagram " + std::to_string(i) + ": cannot send to " +
                                  d.to.ToString() + " from " + (dual_stack_ ? "dual-stack " : "") +
                                  "socket " + local_.ToString());
    }
    if (d.to.port() == 0) {
      return InvalidArgumentError("datagram " + std::to_string(i) + ": destination " +
                                  d.to.ToString() + " has port 0");
    }
  }
  return OkStatus();
}

size_t UdpDatagram::PlanMessages(std::span<const OutDatagram> rest) {
  const bool gso = gso_ && !retry_plain_;
  size_t messages = 0;
  size_t index = 0;
  gso_staging_.Reset();
  while (index < rest.size() && messages < batch_) {
    const size_t run = udp::NextGsoRun(rest.subspan(index), gso, gso_limits_);
    const OutDatagram& first = rest[index];
    iovec* iovs = &send_iovs_[messages * kIovsPerDatagram * gso_limits_.max_segments];
    size_t iov_count = 0;
    for (size_t j = 0; j < run; ++j) {
      // Gather: each datagram's two parts go to the kernel as they are,
      // joined where they touch. With GSO the kernel cuts the concatenation
      // of all parts every gso_size bytes, which are exactly the datagrams'
      // boundaries.
      for (std::span<const std::byte> part : {rest[index + j].bytes, rest[index + j].payload}) {
        iov_count = udp::AppendPart(iovs, iov_count, part);
      }
    }
    // Bulk runs go to the kernel as one iovec (udp_gso_staging.h); when the
    // staging room is used up, this batch ends here and the next starts
    // with it.
    const auto staged = run > 1 ? gso_staging_.Stage(iovs, &iov_count)
                                : udp::GsoStaging::Outcome::kKept;
    if (staged == udp::GsoStaging::Outcome::kFull) break;
    send_staged_[messages] = staged == udp::GsoStaging::Outcome::kCopied;
    msghdr& hdr = send_msgs_[messages].msg_hdr;
    hdr = msghdr{};
    bool ipv4_header = false;
    hdr.msg_namelen = udp::ToKernelAddress(first.to, ipv6_, &send_addrs_[messages], &ipv4_header);
    hdr.msg_name = &send_addrs_[messages];
    hdr.msg_iov = iovs;
    hdr.msg_iovlen = iov_count;
    const auto gso_size = static_cast<uint16_t>(run > 1 ? first.size() : 0);
    // Class-selector DSCP: priority in the top three bits of the TOS byte;
    // a control message only when the socket's own marking differs.
    const int tos = first.priority << 5;
    const int socket_tos = ipv4_header ? socket_tos_v4_ : socket_tos_v6_;
    // A stamped datagram is a run of its own (udp_gso_plan.h).
    send_tokens_[messages] = tx_timestamps_ ? first.departure_token : 0;
    const size_t control_len = udp::WriteSendControl(
        send_controls_[messages].bytes, gso_size, tos == socket_tos ? udp::kSocketTos : tos,
        ipv4_header, send_tokens_[messages] != 0);
    if (control_len > 0) {
      hdr.msg_control = send_controls_[messages].bytes;
      hdr.msg_controllen = control_len;
    }
    send_msgs_[messages].msg_len = 0;
    send_runs_[messages] = run;
    index += run;
    ++messages;
  }
  return messages;
}

Result<size_t> UdpDatagram::Send(std::span<const OutDatagram> batch) {
  WHARF_RETURN_IF_ERROR(CheckBatch(batch));
  size_t done = 0;
  int refused_in_row = 0;
  while (done < batch.size()) {
    const size_t messages = PlanMessages(batch.subspan(done));
    int send_fd = fd_;
    if (messages == 1 && hot_enabled_) {
      const NetAddress& to = batch[done].to;
      if (hot_tracker_.NoteSend(to)) MakeHot(to);
      if (hot_fd_ >= 0 && to == hot_peer_ && (send_tokens_[0] == 0 || hot_stamps_)) {
        // Connected: no address, and so no route lookup.
        send_fd = hot_fd_;
        send_msgs_[0].msg_hdr.msg_name = nullptr;
        send_msgs_[0].msg_hdr.msg_namelen = 0;
      }
    }
    const int sent = messages == 1 ? syscalls_->SendOne(send_fd, send_msgs_.data())
                                   : syscalls_->SendMmsg(fd_, send_msgs_.data(),
                                                         static_cast<unsigned>(messages));
    if (sent > 0 && send_fd != fd_) stats_.hot_sends += send_runs_[0];
    if (tx_timestamps_ && sent > 0) NoteStamped(static_cast<size_t>(sent), send_fd != fd_);
    if (sent > 0) {
      if (retry_plain_) {
        // The datagrams GSO could not send went out plain: GSO is at fault.
        retry_plain_ = false;
        gso_ = false;
        ++stats_.gso_fallbacks;
      }
      ++stats_.send_batches;
      for (int i = 0; i < sent; ++i) {
        const size_t run = send_runs_[i];
        done += run;
        stats_.sent += run;
        if (run > 1) ++stats_.gso_sends;
        if (send_staged_[i]) ++stats_.gso_copied_sends;
      }
      refused_in_row = 0;
      // Fewer than planned means message `sent` failed and sendmmsg dropped
      // its errno; the next round retries it and sees the error itself.
      continue;
    }
    const int err = sent == 0 ? EAGAIN : errno;
    if (err == EINTR) continue;
    if (IsFullSocket(err)) return done;
    const size_t run = send_runs_[0];
    // The kernel raised a report that arrived for this socket (it may be
    // about any earlier destination): its details wait in the error queue.
    if (udp::IsPathErrno(err)) path_errors_pending_ = true;
    if (err == ECONNREFUSED) {
      // A pending report about some earlier datagram, consumed by this call;
      // the datagram at the front was not sent, so it is retried.
      ++stats_.refused;
      if (++refused_in_row <= kMaxRefusedInRow) continue;
      refused_in_row = 0;
      done += run;
      stats_.send_dropped += run;
      continue;
    }
    if (IsDestinationError(err)) {
      done += run;
      stats_.send_dropped += run;
      continue;
    }
    if (run > 1 && IsGsoRejection(err)) {
      retry_plain_ = true;
      continue;
    }
    retry_plain_ = false;
    // Report what is already sent; the caller's retry of the rest meets this
    // error again at its first datagram and gets the Status then.
    if (done > 0) return done;
    const OutDatagram& failed = batch[done];
    return ErrnoToStatus(err, "sendmmsg to " + failed.to.ToString() + " (" +
                                  std::to_string(failed.size()) + " bytes) from " +
                                  local_.ToString());
  }
  return done;
}

void UdpDatagram::MakeHot(const NetAddress& to) {
  sockaddr_storage peer;
  bool ipv4_header = false;
  const socklen_t len = udp::ToKernelAddress(to, ipv6_, &peer, &ipv4_header);
  if (hot_fd_ >= 0) {
    // Hand the socket over: same fd, same queue (udp_hot_peer.h).
    if (!udp::ConnectHotSocket(hot_fd_, peer, len).ok()) {
      ++stats_.hot_socket_failures;
      return;
    }
    hot_peer_ = to;
    hot_tracker_.MadeHot(to);
    ++stats_.hot_handovers;
    return;
  }
  // With GRO as the main socket has it now.
  hot_setup_.gro = receiver_.gro_for_new_sockets();
  Result<int> fd = udp::OpenHotSocket(hot_setup_, peer, len);
  if (!fd.ok()) {
    // Nothing is lost: the main socket goes on serving this peer. Give up
    // after a few refusals rather than paying for the attempt forever.
    if (++stats_.hot_socket_failures >= 3) hot_enabled_ = false;
    return;
  }
  hot_fd_ = *fd;
  hot_peer_ = to;
  hot_tracker_.MadeHot(to);
  receiver_.AddHotSocket(hot_fd_, hot_setup_.gro);
  // Its stamps are numbered from 0 again. Without transmit stamps on it,
  // stamped sends to the hot peer go through the main socket instead.
  if (departures_ != nullptr) departures_->ResetSocket(udp::DepartureStamps::Socket::kHot);
  hot_stamps_ = tx_timestamps_ &&
                udp::EnableTimestamps(hot_fd_, receiver_.receive_timestamps(), true);
  ++stats_.hot_sockets_opened;
}

void UdpDatagram::AppendCounters(std::vector<std::pair<std::string, uint64_t>>* out) const {
  out->insert(out->end(), {{"udp.sent", stats_.sent},
                           {"udp.send_batches", stats_.send_batches},
                           {"udp.gso_sends", stats_.gso_sends},
                           {"udp.gso_copied_sends", stats_.gso_copied_sends},
                           {"udp.received", stats_.received},
                           {"udp.gro_coalesced", stats_.gro_coalesced},
                           {"udp.truncated", stats_.truncated},
                           {"udp.refused", stats_.refused},
                           {"udp.send_dropped", stats_.send_dropped},
                           {"udp.gso_fallbacks", stats_.gso_fallbacks},
                           {"udp.path_errors", stats_.path_errors},
                           {"udp.path_cache_evictions", stats_.path_cache_evictions},
                           {"udp.hot_sends", stats_.hot_sends},
                           {"udp.departure_stamps",
                            departures_ != nullptr ? departures_->counters().reported : 0},
                           {"udp.departure_stamps_lost",
                            departures_ != nullptr ? departures_->counters().lost : 0},
                           {"udp.hot_sockets_opened", stats_.hot_sockets_opened},
                           {"udp.hot_handovers", stats_.hot_handovers},
                           {"udp.hot_socket_failures", stats_.hot_socket_failures},
                           {"udp.gro_enabled_times", stats_.gro_enabled_times},
                           {"udp.gro_disabled_times", stats_.gro_disabled_times},
                           {"udp.gro_disable_deferred", stats_.gro_disable_deferred}});
}

}  // namespace wharf::transport
