// UdpReceiver: batched reads of the main and hot-peer sockets, GRO buffers
// split into datagrams, and adaptive GRO's switching.
#include "transport/udp/udp_receiver.h"

#include <netinet/in.h>
#include <netinet/udp.h>

#include <algorithm>
#include <cerrno>
#include <optional>
#include <string>

#include "transport/udp/udp_addresses.h"
#include "transport/udp/udp_path_errors.h"

namespace wharf::transport::udp {
namespace {

// A GRO buffer never exceeds one maximal UDP datagram.
constexpr size_t kGroSlotBytes = 65536;

}  // namespace

void UdpReceiver::Open(int fd, const NetAddress& local, size_t batch, size_t max_datagram_bytes,
                       GroMode gro, bool timestamps) {
  fd_ = fd;
  timestamps_ = timestamps && EnableReceiveTimestamps(fd_);
  local_ = local;
  batch_ = batch;
  max_datagram_bytes_ = max_datagram_bytes;
  if (gro == GroMode::kOn) {
    (void)SetGro(fd_, main_, true);
  } else if (gro == GroMode::kAdaptive) {
    // Starts off. Setting 0 is a no-op where the kernel has UDP_GRO and
    // ENOPROTOOPT where it has not, which then leaves GRO off for good.
    gro_adaptive_ = syscalls_.SetIntOption(fd_, IPPROTO_UDP, UDP_GRO, 0) == 0;
  }
  gro_for_new_sockets_ = main_.gro;
  // Where GRO can be on, a slot must hold a coalesced buffer, and a
  // datagram over the limit then fits too: OpenMessage drops it by its
  // length. Where it cannot, the slot is exactly the limit, so that a
  // datagram one byte over shows up as MSG_TRUNC.
  const bool gro_capable = main_.gro || gro_adaptive_;
  slot_bytes_ = gro_capable ? kGroSlotBytes : max_datagram_bytes_;
  buffers_.resize(batch_ * slot_bytes_);
  msgs_.resize(batch_);
  iovs_.resize(batch_);
  addrs_.resize(batch_);
  controls_.resize(batch_);
  // The headers point at their slots for good; ReadMessages only resets
  // what the kernel writes back.
  for (size_t i = 0; i < batch_; ++i) {
    iovs_[i].iov_base = &buffers_[i * slot_bytes_];
    iovs_[i].iov_len = slot_bytes_;
    msghdr& hdr = msgs_[i].msg_hdr;
    hdr = msghdr{};
    hdr.msg_name = &addrs_[i];
    hdr.msg_iov = &iovs_[i];
    hdr.msg_iovlen = 1;
    // Set for good; msg_controllen, set per read, says whether it is used.
    if (gro_capable || timestamps_) hdr.msg_control = controls_[i].bytes;
  }
  main_.window = batch_;
}

void UdpReceiver::AddHotSocket(int fd, bool gro) {
  hot_fd_ = fd;
  hot_.gro = gro;
  // Without them this socket's datagrams have received_ns 0: nothing else.
  if (timestamps_) (void)EnableReceiveTimestamps(fd);
}

Result<size_t> UdpReceiver::Receive(std::span<InDatagram> out) {
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

Result<size_t> UdpReceiver::ReadAnySocket(size_t count) {
  if (hot_fd_ < 0) return ReadMessages(fd_, main_, count);
  // The hot socket on every call; the main one on every kMainReadEvery-th
  // call, first, so that a busy hot peer cannot starve the others. An idle
  // poll then costs 1 + 1/kMainReadEvery reads instead of 2, and other
  // peers' packets wait at most kMainReadEvery - 1 calls longer.
  if (++reads_since_main_ < kMainReadEvery) {
    Result<size_t> hot = ReadMessages(hot_fd_, hot_, count);
    if (!hot.ok() || *hot > 0) return hot;
    return size_t{0};
  }
  reads_since_main_ = 0;
  // An error on one socket must not keep the other from being read: the
  // read that failed has consumed its error, so try the other.
  Result<size_t> main = ReadMessages(fd_, main_, count);
  if (main.ok() && *main > 0) return main;
  Result<size_t> hot = ReadMessages(hot_fd_, hot_, count);
  if (hot.ok() && *hot == 0 && !main.ok()) return main;
  return hot;
}

Result<size_t> UdpReceiver::ReadMessages(int fd, ReadWindow& w, size_t count) {
  count = std::min(count, w.window);
  for (size_t i = 0; i < count; ++i) {
    msghdr& hdr = msgs_[i].msg_hdr;
    hdr.msg_namelen = sizeof(sockaddr_storage);
    hdr.msg_controllen = (w.gro || timestamps_) ? sizeof(controls_[i].bytes) : 0;
    hdr.msg_flags = 0;
    msgs_[i].msg_len = 0;
  }
  int refused_in_row = 0;
  while (true) {
    const int got = count == 1 ? syscalls_.RecvOne(fd, msgs_.data())
                               : syscalls_.RecvMmsg(fd, msgs_.data(), static_cast<unsigned>(count));
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
      if (timestamps_ && n > 0) realtime_to_mono_ns_ = RealtimeToMonotonicNs();
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
    if (IsPathErrno(err) && ++refused_in_row <= kMaxRefusedInRow) {
      path_errors_pending_ = true;
      if (err == ECONNREFUSED) ++stats_.refused;
      continue;
    }
    return ErrnoToStatus(err, "recvmmsg on " + local_.ToString());
  }
}

bool UdpReceiver::OpenMessage() {
  const mmsghdr& message = msgs_[next_message_];
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
    if (std::optional<size_t> gro_segment = ReadGroSegmentBytes(message.msg_hdr)) {
      segment = *gro_segment;
    }
  }
  if (segment > max_datagram_bytes_) {
    stats_.truncated += (len + segment - 1) / segment;
    return false;
  }
  Result<NetAddress> from = FromKernelAddress(addrs_[next_message_], message.msg_hdr.msg_namelen);
  // An AF_INET/AF_INET6 socket only reports its own families, so this is
  // unreachable in practice; dropping is the safe answer to the impossible.
  if (!from.ok()) return false;
  if (segment < len) ++stats_.gro_coalesced;
  // A coalesced buffer carries its first datagram's stamp: the kernel
  // merged the rest as they came, within microseconds.
  message_received_ns_ = 0;
  if (timestamps_ && message.msg_hdr.msg_controllen > 0) {
    if (std::optional<int64_t> real = ReadSoftwareTimestamp(message.msg_hdr)) {
      message_received_ns_ = *real + realtime_to_mono_ns_;
    }
  }
  message_from_ = *from;
  segment_bytes_ = segment;
  message_offset_ = 0;
  return true;
}

size_t UdpReceiver::DrainMessages(std::span<InDatagram> out) {
  size_t filled = 0;
  while (filled < out.size() && next_message_ < read_messages_) {
    if (!message_open_) {
      if (!OpenMessage()) {
        ++next_message_;
        continue;
      }
      message_open_ = true;
    }
    const size_t len = msgs_[next_message_].msg_len;
    const std::byte* base = &buffers_[next_message_ * slot_bytes_];
    // do/while so that an empty datagram is still handed out once.
    do {
      const size_t take = std::min(segment_bytes_, len - message_offset_);
      out[filled++] =
          InDatagram{message_from_, std::span(base + message_offset_, take), message_received_ns_};
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

// ------------------------------------------------------------ adaptive GRO

bool UdpReceiver::SetGro(int fd, ReadWindow& reads, bool on) {
  if (syscalls_.SetIntOption(fd, IPPROTO_UDP, UDP_GRO, on ? 1 : 0) != 0) return false;
  reads.gro = on;
  return true;
}

void UdpReceiver::AdaptGro(size_t messages) {
  bool lone = false;
  if (messages == 1) {
    const mmsghdr& only = msgs_[0];
    std::optional<size_t> segment;
    if (only.msg_hdr.msg_controllen > 0) segment = ReadGroSegmentBytes(only.msg_hdr);
    lone = !segment.has_value() || *segment >= only.msg_len;
  }
  switch (gro_policy_.NoteRead(main_.gro, messages, lone)) {
    case AdaptiveGro::Action::kNone:
      return;
    case AdaptiveGro::Action::kTurnOn:
      TurnGroOn();
      return;
    case AdaptiveGro::Action::kTurnOff:
      TurnGroOff();
      return;
  }
}

void UdpReceiver::TurnGroOn() {
  if (!SetGro(fd_, main_, true)) {
    // The kernel refuses UDP_GRO: off for good, as if never asked. The
    // slots stay large, which only costs memory.
    gro_adaptive_ = false;
    return;
  }
  // The hot socket follows; should it refuse, it goes on receiving
  // datagrams one by one, which its reads handle just as well.
  if (hot_fd_ >= 0) (void)SetGro(hot_fd_, hot_, true);
  gro_for_new_sockets_ = true;
  ++stats_.gro_enabled_times;
}

bool UdpReceiver::QueueEmpty(int fd) {
  if (syscalls_.PeekQueuedBytes(fd) >= 0) return false;
  const int err = errno;
  // A pending ICMP error fails the peek and is consumed by it, as by a
  // read: note it as ReadMessages would.
  if (IsPathErrno(err)) {
    path_errors_pending_ = true;
    if (err == ECONNREFUSED) ++stats_.refused;
  }
  return err == EAGAIN || err == EWOULDBLOCK;
}

void UdpReceiver::TurnGroOff() {
  // The kernel decides as it queues a datagram whether a GSO run stays one
  // buffer (GRO on) or is split, but adds the segment size only to reads
  // made while GRO is on. So a coalesced buffer queued before the switch
  // would afterwards read as one datagram holding many. Hence: switch, then
  // look. Anything queued may be such a buffer, so then switch back and try
  // again after another run of lone reads. Right after the lone read that
  // ends a ping-pong's run both queues are empty, so this rarely defers.
  (void)SetGro(fd_, main_, false);
  if (hot_fd_ >= 0 && hot_.gro) (void)SetGro(hot_fd_, hot_, false);
  if (!main_.gro && !hot_.gro) {
    const bool main_empty = QueueEmpty(fd_);
    const bool hot_empty = hot_fd_ < 0 || QueueEmpty(hot_fd_);
    if (main_empty && hot_empty) {
      gro_for_new_sockets_ = false;
      ++stats_.gro_disabled_times;
      return;
    }
    // Queued, or the peek failed (an ICMP error pending, say): the reads
    // will tell; stay on for now.
    ++stats_.gro_disable_deferred;
  } else {
    // The kernel refuses to switch off: leave GRO on for good.
    gro_adaptive_ = false;
  }
  if (!SetGro(fd_, main_, true)) gro_adaptive_ = false;
  if (hot_fd_ >= 0) (void)SetGro(hot_fd_, hot_, true);
}

}  // namespace wharf::transport::udp
