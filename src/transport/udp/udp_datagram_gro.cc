// UdpDatagram's adaptive GRO (udp_adaptive_gro.h decides; this switches
// the sockets): turning UDP_GRO on and off as the reads go, without
// misreading a coalesced buffer queued across a switch.
#include <netinet/in.h>
#include <netinet/udp.h>

#include <cerrno>
#include <optional>

#include "transport/udp/udp_datagram.h"
#include "transport/udp/udp_path_errors.h"

namespace wharf::transport {

bool UdpDatagram::SetGro(int fd, ReadWindow& reads, bool on) {
  if (syscalls_->SetIntOption(fd, IPPROTO_UDP, UDP_GRO, on ? 1 : 0) != 0) return false;
  reads.gro = on;
  return true;
}

void UdpDatagram::AdaptGro(size_t messages) {
  bool lone = false;
  if (messages == 1) {
    const mmsghdr& only = recv_msgs_[0];
    std::optional<size_t> segment;
    if (only.msg_hdr.msg_controllen > 0) segment = udp::ReadGroSegmentBytes(only.msg_hdr);
    lone = !segment.has_value() || *segment >= only.msg_len;
  }
  switch (gro_policy_.NoteRead(main_reads_.gro, messages, lone)) {
    case udp::AdaptiveGro::Action::kNone:
      return;
    case udp::AdaptiveGro::Action::kTurnOn:
      TurnGroOn();
      return;
    case udp::AdaptiveGro::Action::kTurnOff:
      TurnGroOff();
      return;
  }
}

void UdpDatagram::TurnGroOn() {
  if (!SetGro(fd_, main_reads_, true)) {
    // The kernel refuses UDP_GRO: off for good, as if never asked. The
    // slots stay large, which only costs memory.
    gro_adaptive_ = false;
    return;
  }
  // The hot socket follows; should it refuse, it goes on receiving
  // datagrams one by one, which its reads handle just as well.
  if (hot_fd_ >= 0) (void)SetGro(hot_fd_, hot_reads_, true);
  hot_setup_.gro = true;
  ++stats_.gro_enabled_times;
}

void UdpDatagram::TurnGroOff() {
  // The kernel decides as it queues a datagram whether a GSO run stays one
  // buffer (GRO on) or is split, but adds the segment size only to reads
  // made while GRO is on. So a coalesced buffer queued before the switch
  // would afterwards read as one datagram holding many. Hence: switch, then
  // look. Anything queued may be such a buffer, so then switch back and try
  // again after another run of lone reads. Right after the lone read that
  // ends a ping-pong's run both queues are empty, so this rarely defers.
  (void)SetGro(fd_, main_reads_, false);
  if (hot_fd_ >= 0 && hot_reads_.gro) (void)SetGro(hot_fd_, hot_reads_, false);
  if (!main_reads_.gro && !hot_reads_.gro) {
    auto empty = [this](int fd) {
      if (syscalls_->PeekQueuedBytes(fd) >= 0) return false;
      const int err = errno;
      // A pending ICMP error fails the peek and is consumed by it, as by a
      // read: note it as ReadMessages would.
      if (udp::IsPathErrno(err)) {
        path_errors_pending_ = true;
        if (err == ECONNREFUSED) ++stats_.refused;
      }
      return err == EAGAIN || err == EWOULDBLOCK;
    };
    const bool main_empty = empty(fd_);
    const bool hot_empty = hot_fd_ < 0 || empty(hot_fd_);
    if (main_empty && hot_empty) {
      hot_setup_.gro = false;
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
  if (!SetGro(fd_, main_reads_, true)) gro_adaptive_ = false;
  if (hot_fd_ >= 0) (void)SetGro(hot_fd_, hot_reads_, true);
}

}  // namespace wharf::transport
