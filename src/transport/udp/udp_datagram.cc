// UdpDatagram: opening the socket, batched GSO sends, batched GRO receives.
#include "transport/udp/udp_datagram.h"

#include "transport/udp/udp_egress_device.h"
#include "transport/udp/udp_path_errors.h"

#include <ifaddrs.h>
#include <netinet/in.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace wharf::transport {
namespace {

constexpr size_t kUdpHeaderBytes = 8;
constexpr size_t kMaxUdpPayloadBytes = 65507;  // 65535 - 20 (IPv4) - 8 (UDP)
// A GRO buffer never exceeds one maximal UDP datagram.
constexpr size_t kGroSlotBytes = 65536;
// UIO_MAXIOV: the kernel caps a sendmmsg/recvmmsg vector at this many.
constexpr size_t kMaxBatch = 1024;
constexpr uint8_t kMaxPriority = 7;
// A datagram goes out as up to two iovecs: its header part and its payload.
constexpr size_t kIovsPerDatagram = 2;
// Each ECONNREFUSED consumes one pending ICMP report; more in a row than
// this means reports keep arriving faster than we send, so the datagram at
// the front is dropped rather than spinning.
constexpr int kMaxRefusedInRow = 8;
// Kernel reads per Receive call when everything read is dropped, so that a
// flood of oversized datagrams cannot keep Receive from returning.
constexpr int kMaxEmptyReads = 16;

bool IsV4Mapped(const std::array<uint8_t, 16>& ip) {
  static constexpr uint8_t kPrefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};
  return std::memcmp(ip.data(), kPrefix, sizeof(kPrefix)) == 0;
}

// Writes `to` as the kernel wants it for a socket of the given family;
// returns the address length. `ipv4_header` says whether the packet leaves
// with an IPv4 header, which decides the TOS cmsg's level.
socklen_t ToKernelAddress(const NetAddress& to, bool ipv6_socket, sockaddr_storage* out,
                          bool* ipv4_header) {
  if (ipv6_socket && to.is_v4()) {
    std::array<uint8_t, 16> mapped{};
    mapped[10] = 0xff;
    mapped[11] = 0xff;
    std::memcpy(&mapped[12], to.ip_bytes().data(), 4);
    *ipv4_header = true;
    return static_cast<socklen_t>(NetAddress::Ipv6(mapped, to.port()).ToSockaddr(out));
  }
  *ipv4_header = to.is_v4() || IsV4Mapped(to.ip_bytes());
  return static_cast<socklen_t>(to.ToSockaddr(out));
}

// The reverse: IPv4 peers of a dual-stack socket come back as plain IPv4.
Result<NetAddress> FromKernelAddress(const sockaddr_storage& from, socklen_t len) {
  WHARF_ASSIGN_OR_RETURN(NetAddress address,
                         NetAddress::FromSockaddr(reinterpret_cast<const sockaddr*>(&from), len));
  if (address.is_v6() && IsV4Mapped(address.ip_bytes())) {
    uint32_t be = 0;
    std::memcpy(&be, &address.ip_bytes()[12], 4);
    return NetAddress::Ipv4(ntohl(be), address.port());
  }
  return address;
}

// 127.0.0.0/8, ::1 and ::ffff:127.0.0.0/104.
bool IsLoopbackIp(const NetAddress& a) {
  const std::array<uint8_t, 16>& ip = a.ip_bytes();
  if (a.is_v4()) return ip[0] == 127;
  static constexpr std::array<uint8_t, 16> kV6Loopback = {0, 0, 0, 0, 0, 0, 0, 0,
                                                          0, 0, 0, 0, 0, 0, 0, 1};
  return ip == kV6Loopback || (IsV4Mapped(ip) && ip[12] == 127);
}

// `a` with port 0 and, when v4-mapped, as plain IPv4: the key of the path
// caches, which do not depend on the port.
NetAddress PathKey(const NetAddress& a) {
  if (a.is_v6() && IsV4Mapped(a.ip_bytes())) {
    uint32_t be = 0;
    std::memcpy(&be, &a.ip_bytes()[12], 4);
    return NetAddress::Ipv4(ntohl(be), 0);
  }
  return a.WithPort(0);
}

// What the kernel's route towards `to` says (connect() on a UDP socket only
// looks up the route; nothing is sent): its datagram limit from IP_MTU, at
// most `limit`, and the source address it would use (kNone if unknown).
struct Route {
  size_t max_bytes;
  NetAddress source;
};
Route RouteTo(const NetAddress& to, size_t limit) {
  Route route{limit, NetAddress()};
  const bool v6 = to.is_v6();
  int probe = socket(v6 ? AF_INET6 : AF_INET, SOCK_DGRAM | SOCK_CLOEXEC, IPPROTO_UDP);
  if (probe < 0) return route;
  sockaddr_storage address;
  auto len = static_cast<socklen_t>(to.WithPort(to.port() == 0 ? 9 : to.port()).ToSockaddr(&address));
  int mtu = 0;
  socklen_t mtu_len = sizeof(mtu);
  if (connect(probe, reinterpret_cast<const sockaddr*>(&address), len) == 0) {
    if (getsockopt(probe, v6 ? IPPROTO_IPV6 : IPPROTO_IP, v6 ? IPV6_MTU : IP_MTU, &mtu,
                   &mtu_len) == 0 &&
        mtu > 0) {
      const size_t headers = (v6 ? 40 : 20) + kUdpHeaderBytes;
      if (static_cast<size_t>(mtu) > headers) {
        route.max_bytes = std::min(route.max_bytes, static_cast<size_t>(mtu) - headers);
      }
    }
    sockaddr_storage source;
    socklen_t source_len = sizeof(source);
    if (getsockname(probe, reinterpret_cast<sockaddr*>(&source), &source_len) == 0) {
      Result<NetAddress> from = NetAddress::FromSockaddr(reinterpret_cast<sockaddr*>(&source),
                                                         source_len);
      if (from.ok()) route.source = PathKey(*from);
    }
  }
  close(probe);
  return route;
}

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

}  // namespace

UdpDatagram::UdpDatagram(int fd, const UdpOptions& options)
    : fd_(fd),
      syscalls_(options.syscalls != nullptr ? options.syscalls : &udp::UdpSyscalls::Kernel()),
      batch_(options.batch),
      mtu_(options.mtu),
      ipv6_(options.bind.is_v6()),
      dual_stack_(options.bind.is_v6() && !options.ipv6_only),
      gso_limits_(),
      gso_staging_(options.gso_copy_min_bytes) {}

UdpDatagram::~UdpDatagram() {
  close(fd_);
  if (hot_fd_ >= 0) close(hot_fd_);
}

size_t UdpDatagram::MaxDatagramBytesTo(const NetAddress& to) {
  if (IsLocalPath(to)) return local_path_max_bytes_;
  return PathTo(to).max_bytes;
}

bool UdpDatagram::IsSoftwarePath(const NetAddress& to) {
  return IsLocalPath(to) || PathTo(to).software;
}

const UdpDatagram::PathInfo& UdpDatagram::PathTo(const NetAddress& to) {
  const NetAddress key = PathKey(to);
  auto cached = paths_.find(key);
  if (cached != paths_.end()) return cached->second;
  if (paths_.size() >= kMaxPathCacheEntries) {
    // A cap, not an LRU: asking again costs one probe per destination.
    stats_.path_cache_evictions += paths_.size();
    paths_.clear();
  }
  const Route route = RouteTo(to, max_datagram_bytes_);
  PathInfo info{.max_bytes = route.max_bytes, .software = false};
  for (const NetAddress& mine : software_ips_) {
    if (route.source.family() != NetAddress::Family::kNone && mine == route.source) {
      info.software = true;
    }
  }
  return paths_.emplace(key, info).first->second;
}

bool UdpDatagram::IsLocalPath(const NetAddress& to) {
  if (IsLoopbackIp(to)) return true;
  const NetAddress key = PathKey(to);
  for (const NetAddress& mine : host_ips_) {
    if (mine == key) return true;
  }
  return false;
}

void UdpDatagram::RefreshPaths() {
  host_ips_.clear();
  software_ips_.clear();
  ifaddrs* list = nullptr;
  if (getifaddrs(&list) == 0) {
    for (const ifaddrs* i = list; i != nullptr; i = i->ifa_next) {
      const sockaddr* sa = i->ifa_addr;
      if (sa == nullptr || (sa->sa_family != AF_INET && sa->sa_family != AF_INET6)) continue;
      const socklen_t len = sa->sa_family == AF_INET ? sizeof(sockaddr_in) : sizeof(sockaddr_in6);
      Result<NetAddress> mine = NetAddress::FromSockaddr(sa, len);
      if (!mine.ok()) continue;
      host_ips_.push_back(PathKey(*mine));
      if (udp::IsSoftwareDriver(udp::InterfaceDriver(fd_, i->ifa_name))) {
        software_ips_.push_back(PathKey(*mine));
      }
    }
    freeifaddrs(list);
  }
  // Every local path goes through the loopback device, whatever address it
  // names, so one route answers for all of them.
  local_path_max_bytes_ =
      RouteTo(ipv6_ && !dual_stack_
                  ? NetAddress::Ipv6({0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1}, 9)
                  : NetAddress::Ipv4(0x7f000001, 9),
              max_datagram_bytes_)
          .max_bytes;
  paths_.clear();
}

size_t UdpDatagram::TakePathErrors(std::span<PathError> out) {
  if (!path_errors_pending_ || out.empty()) return 0;
  bool more_main = false;
  bool more_hot = false;
  size_t n = udp::ReadPathErrors(fd_, out, &more_main);
  if (hot_fd_ >= 0) n += udp::ReadPathErrors(hot_fd_, out.subspan(n), &more_hot);
  path_errors_pending_ = more_main || more_hot;
  stats_.path_errors += n;
  return n;
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
  WHARF_ASSIGN_OR_RETURN(local_, FromKernelAddress(address, bound_len));

  const size_t ip_header_bytes = ipv6_ ? 40 : 20;
  max_datagram_bytes_ =
      std::min(options.mtu - ip_header_bytes - kUdpHeaderBytes, kMaxUdpPayloadBytes);
  gso_ = options.enable_gso && udp::ProbeGso(fd_);
  if (options.enable_gro) {
    const LoopbackGro mode = IsLoopbackIp(local_) ? options.loopback_gro : LoopbackGro::kAlways;
    if (mode == LoopbackGro::kAlways) {
      (void)SetGro(fd_, main_reads_, true);
    } else if (mode == LoopbackGro::kAdaptive) {
      // Starts off. Setting 0 is a no-op where the kernel has UDP_GRO and
      // ENOPROTOOPT where it has not, which then leaves GRO off for good.
      gro_adaptive_ = syscalls_->SetIntOption(fd_, IPPROTO_UDP, UDP_GRO, 0) == 0;
    }
  }
  gro_capable_ = main_reads_.gro || gro_adaptive_;
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
  RefreshPaths();
  hot_enabled_ = options.hot_peer_socket;
  hot_setup_ = {.local = local_,
                .ipv6 = ipv6_,
                .dual_stack = dual_stack_,
                .recv_buffer_bytes = options.recv_buffer_bytes,
                .send_buffer_bytes = options.send_buffer_bytes,
                .gro = main_reads_.gro,
                .tos_v4 = socket_tos_v4_,
                .tos_v6 = socket_tos_v6_};

  send_msgs_.resize(batch_);
  send_iovs_.resize(batch_ * kIovsPerDatagram * gso_limits_.max_segments);
  send_addrs_.resize(batch_);
  send_controls_.resize(batch_);
  send_runs_.resize(batch_);
  send_staged_.resize(batch_);

  // Where GRO can be on, a slot must hold a coalesced buffer, and a
  // datagram over the limit then fits too: OpenMessage drops it by its
  // length. Where it cannot, the slot is exactly the limit, so that a
  // datagram one byte over shows up as MSG_TRUNC.
  slot_bytes_ = gro_capable_ ? kGroSlotBytes : max_datagram_bytes_;
  recv_buffers_.resize(batch_ * slot_bytes_);
  recv_msgs_.resize(batch_);
  recv_iovs_.resize(batch_);
  recv_addrs_.resize(batch_);
  recv_controls_.resize(batch_);
  // The receive headers point at their slots for good; ReadMessages only
  // resets what the kernel writes back.
  for (size_t i = 0; i < batch_; ++i) {
    recv_iovs_[i].iov_base = &recv_buffers_[i * slot_bytes_];
    recv_iovs_[i].iov_len = slot_bytes_;
    msghdr& hdr = recv_msgs_[i].msg_hdr;
    hdr = msghdr{};
    hdr.msg_name = &recv_addrs_[i];
    hdr.msg_iov = &recv_iovs_[i];
    hdr.msg_iovlen = 1;
    // Set for good; msg_controllen, set per read, says whether it is used.
    if (gro_capable_) hdr.msg_control = recv_controls_[i].bytes;
  }
  main_reads_.window = batch_;
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
    hdr.msg_namelen = ToKernelAddress(first.to, ipv6_, &send_addrs_[messages], &ipv4_header);
    hdr.msg_name = &send_addrs_[messages];
    hdr.msg_iov = iovs;
    hdr.msg_iovlen = iov_count;
    const auto gso_size = static_cast<uint16_t>(run > 1 ? first.size() : 0);
    // Class-selector DSCP: priority in the top three bits of the TOS byte;
    // a control message only when the socket's own marking differs.
    const int tos = first.priority << 5;
    const int socket_tos = ipv4_header ? socket_tos_v4_ : socket_tos_v6_;
    const size_t control_len =
        udp::WriteSendControl(send_controls_[messages].bytes, gso_size,
                              tos == socket_tos ? udp::kSocketTos : tos, ipv4_header);
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
      if (hot_tracker_.NoteSend(to) && hot_fd_ < 0) OpenHotPeer(to);
      if (hot_fd_ >= 0 && to == hot_peer_) {
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

void UdpDatagram::OpenHotPeer(const NetAddress& to) {
  sockaddr_storage peer;
  bool ipv4_header = false;
  const socklen_t len = ToKernelAddress(to, ipv6_, &peer, &ipv4_header);
  Result<int> fd = udp::OpenHotSocket(hot_setup_, peer, len);
  if (!fd.ok()) {
    // Nothing is lost: the main socket goes on serving this peer. Give up
    // after a few refusals rather than paying for the attempt forever.
    if (++stats_.hot_socket_failures >= 3) hot_enabled_ = false;
    return;
  }
  hot_fd_ = *fd;
  hot_peer_ = to;
  hot_reads_.gro = hot_setup_.gro;
  ++stats_.hot_sockets_opened;
}

Result<size_t> UdpDatagram::ReadAnySocket(size_t count) {
  if (hot_fd_ < 0) return ReadMessages(fd_, main_reads_, count);
  // The hot socket on every call; the main one on every kMainReadEvery-th
  // call, first, so that a busy hot peer cannot starve the others. An idle
  // poll then costs 1 + 1/kMainReadEvery reads instead of 2, and other
  // peers' packets wait at most kMainReadEvery - 1 calls longer.
  if (++reads_since_main_ < kMainReadEvery) {
    Result<size_t> hot = ReadMessages(hot_fd_, hot_reads_, count);
    if (!hot.ok() || *hot > 0) return hot;
    return size_t{0};
  }
  reads_since_main_ = 0;
  // An error on one socket must not keep the other from being read: the
  // read that failed has consumed its error, so try the other.
  Result<size_t> main = ReadMessages(fd_, main_reads_, count);
  if (main.ok() && *main > 0) return main;
  Result<size_t> hot = ReadMessages(hot_fd_, hot_reads_, count);
  if (hot.ok() && *hot == 0 && !main.ok()) return main;
  return hot;
}

Result<size_t> UdpDatagram::ReadMessages(int fd, ReadWindow& w, size_t count) {
  count = std::min(count, w.window);
  for (size_t i = 0; i < count; ++i) {
    msghdr& hdr = recv_msgs_[i].msg_hdr;
    hdr.msg_namelen = sizeof(sockaddr_storage);
    hdr.msg_controllen = w.gro ? sizeof(recv_controls_[i].bytes) : 0;
    hdr.msg_flags = 0;
    recv_msgs_[i].msg_len = 0;
  }
  int refused_in_row = 0;
  while (true) {
    const int got = count == 1
                        ? syscalls_->RecvOne(fd, recv_msgs_.data())
                        : syscalls_->RecvMmsg(fd, recv_msgs_.data(), static_cast<unsigned>(count));
    if (got >= 0) {
      // A read that emptied the socket is most likely followed by a lone
      // packet (a request, a reply): read that with a window of one, because
      // recvmmsg tries the slot after the last datagram it finds, and that
      // failed attempt sits on every round trip's critical path. Reads that
      // fill their window mean a burst: widen it again, doubling, once two
      // single reads in a row came back full (one alone is the usual lone
      // packet, and the empty read after it is cheapest with recvfrom).
      const auto n = static_cast<size_t>(got);
      if (n < count) {
        w.window = 1;
        w.full_single_reads = 0;
      } else if (count > 1 || ++w.full_single_reads >= 2) {
        w.window = std::min(batch_, count * 2);
        w.full_single_reads = 0;
      }
      if (gro_adaptive_ && n > 0) AdaptGro(n);
      return n;
    }
    const int err = errno;
    if (err == EINTR) continue;
    if (err == EAGAIN || err == EWOULDBLOCK) {
      w.window = 1;
      w.full_single_reads = 0;
      return size_t{0};
    }
    // A pending ICMP report (IP_RECVERR) fails the read that meets it and is
    // cleared by it; the datagrams behind it are still queued, and the
    // report itself waits in the error queue (TakePathErrors).
    if (udp::IsPathErrno(err) && ++refused_in_row <= kMaxRefusedInRow) {
      path_errors_pending_ = true;
      if (err == ECONNREFUSED) ++stats_.refused;
      continue;
    }
    return ErrnoToStatus(err, "recvmmsg on " + local_.ToString());
  }
}

bool UdpDatagram::OpenMessage() {
  const mmsghdr& message = recv_msgs_[next_message_];
  if ((message.msg_hdr.msg_flags & MSG_TRUNC) != 0) {
    ++stats_.truncated;
    return false;
  }
  const size_t len = message.msg_len;
  size_t segment = len;
  // Per message, not by the socket's GRO state now: adaptive GRO may have
  // switched since this message was read, and one read with GRO off has no
  // control message (the kernel sets msg_controllen to what it wrote).
  if (message.msg_hdr.msg_controllen > 0) {
    if (std::optional<size_t> gro_segment = udp::ReadGroSegmentBytes(message.msg_hdr)) {
      segment = *gro_segment;
    }
  }
  if (segment > max_datagram_bytes_) {
    stats_.truncated += (len + segment - 1) / segment;
    return false;
  }
  Result<NetAddress> from =
      FromKernelAddress(recv_addrs_[next_message_], message.msg_hdr.msg_namelen);
  // An AF_INET/AF_INET6 socket only reports its own families, so this is
  // unreachable in practice; dropping is the safe answer to the impossible.
  if (!from.ok()) return false;
  if (segment < len) ++stats_.gro_coalesced;
  message_from_ = *from;
  segment_bytes_ = segment;
  message_offset_ = 0;
  return true;
}

size_t UdpDatagram::DrainMessages(std::span<InDatagram> out) {
  size_t filled = 0;
  while (filled < out.size() && next_message_ < read_messages_) {
    if (!message_open_) {
      if (!OpenMessage()) {
        ++next_message_;
        continue;
      }
      message_open_ = true;
    }
    const size_t len = recv_msgs_[next_message_].msg_len;
    const std::byte* base = &recv_buffers_[next_message_ * slot_bytes_];
    // do/while so that an empty datagram is still handed out once.
    do {
      const size_t take = std::min(segment_bytes_, len - message_offset_);
      out[filled++] = InDatagram{message_from_, std::span(base + message_offset_, take)};
      message_offset_ += take;
    } while (message_offset_ < len && filled < out.size());
    if (message_offset_ >= len) {
      message_open_ = false;
      ++next_message_;
    }
  }
  stats_.received += filled;
  return filled;
}

Result<size_t> UdpDatagram::Receive(std::span<InDatagram> out) {
  if (out.empty()) return size_t{0};
  size_t filled = 0;
  for (int empty_reads = 0; empty_reads < kMaxEmptyReads;) {
    if (next_message_ >= read_messages_) {
      // Reading again would overwrite buffers `out` already points into.
      if (filled > 0) return filled;
      WHARF_ASSIGN_OR_RETURN(read_messages_, ReadAnySocket(std::min(out.size(), batch_)));
      next_message_ = 0;
      message_open_ = false;
      if (read_messages_ == 0) return size_t{0};
    }
    const size_t drained = DrainMessages(out.subspan(filled));
    filled += drained;
    if (filled == out.size()) return filled;
    if (drained == 0) ++empty_reads;
  }
  return filled;
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
                           {"udp.hot_sockets_opened", stats_.hot_sockets_opened},
                           {"udp.hot_socket_failures", stats_.hot_socket_failures},
                           {"udp.gro_enabled_times", stats_.gro_enabled_times},
                           {"udp.gro_disabled_times", stats_.gro_disabled_times},
                           {"udp.gro_disable_deferred", stats_.gro_disable_deferred}});
}

}  // namespace wharf::transport
