// transport/udp/udp_adaptive_gro.h: AdaptiveGro, the rule by which a UDP
// socket bound to a loopback address turns UDP GRO on under load and off
// again for lone packets. Pure bookkeeping over what reads returned; the
// setsockopt calls and their failure handling are UdpDatagram's.
//
// Why adaptive: with GRO the kernel hands a GSO send (the send batching
// sends a run of datagrams to one peer as one) to the reader as one buffer,
// so one read takes a whole run: at 32 RPCs in flight on loopback that more
// than doubled throughput here. But with GRO on every read must pass a
// control buffer (recvmsg instead of recvfrom), about 0.3-0.5 us of each
// round trip when a lone RPC is in flight, where nothing is coalesced. So:
// on when reads show a queue, off after a long run of reads that did not.
#pragma once

#include <cstddef>
#include <cstdint>

namespace wharf::transport::udp {

class AdaptiveGro {
 public:
  // A read that returns this many kernel messages turns GRO on. The read
  // window (UdpDatagram::ReadMessages) starts at one after every read that
  // emptied the socket and doubles only while reads come back full, so a
  // read of 4 means at least 4 datagrams waited at once (8 arrived back to
  // back when the window had to grow to 4 first): a queue, which a
  // ping-pong or two or three RPCs in flight never build, and which is
  // where coalesced reads pay. Four messages also spread the control
  // buffer's cost over four datagrams if GRO turns out to coalesce nothing.
  static constexpr size_t kOnAfterMessages = 4;
  // This many reads in a row, each of one message holding one datagram,
  // turn it off again. Long enough that the lone reads in the gaps of a
  // busy period (a burst's tail, one reply between two batches) never turn
  // it off, so it does not flap: every read of two or more messages, or of
  // a coalesced buffer, starts the count over. Short enough that a
  // ping-pong that follows a burst pays the control buffer for only 64
  // round trips (about 30 us in all), against two setsockopt calls per
  // switch.
  static constexpr uint32_t kOffAfterLoneReads = 64;

  enum class Action : uint8_t { kNone, kTurnOn, kTurnOff };

  // Records a read that returned `messages` (>= 1) kernel messages while GRO
  // was `on`; `lone` when that was one message holding one datagram. Says
  // what to do now. After kTurnOff the count starts over, so a switch that
  // had to be abandoned is retried after another full run.
  Action NoteRead(bool on, size_t messages, bool lone) {
    if (!on) return messages >= kOnAfterMessages ? Action::kTurnOn : Action::kNone;
    if (!lone) {
      lone_reads_ = 0;
      return Action::kNone;
    }
    if (++lone_reads_ < kOffAfterLoneReads) return Action::kNone;
    lone_reads_ = 0;
    return Action::kTurnOff;
  }

 private:
  uint32_t lone_reads_ = 0;  // lone reads in a row while on
};

}  // namespace wharf::transport::udp
