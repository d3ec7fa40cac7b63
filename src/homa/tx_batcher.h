// homa/tx_batcher.h: TxBatcher, a host's transmit batch: the packets the
// protocol has built and not yet handed to the socket, and when to hand them
// over. Packets gather in the batch and leave with one Datagram::Send() (one
// sendmmsg, or GSO sends for runs to one peer): at once after each API call
// or Poll, or held between Begin and End (MessageTransport::BeginBatch) with
// the head of the burst sent early.
//
// It holds the bytes only: which packets to build and when is the protocol's
// (homa_host.h, sender.h). DATA headers and short payloads are copied into
// its slots; longer payloads stay in their message (a gather send) until the
// batch leaves, so whoever frees a message first calls FlushBorrowed.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <vector>

#include "homa/stats.h"
#include "transport/datagram.h"
#include "transport/net_address.h"
#include "wire/packet.h"

namespace wharf::homa {

// Owned by HomaHost (one per socket, shared by its endpoints). Borrows the
// socket and the host's counters, which outlive it. Single-threaded: the
// host's thread.
class TxBatcher {
 public:
  // Datagrams per Send() call: as many as one GSO send may carry
  // (UDP_MAX_SEGMENTS), so that a burst to one peer is one system call. A
  // full batch leaves at once, held or not.
  static constexpr size_t kMaxPackets = 64;
  // DATA payloads up to this size are copied next to their header: one
  // contiguous datagram lets the transport use its cheapest send call, which
  // matters more for a short message than a copy of a few hundred bytes.
  // Longer payloads are sent from the message in place.
  static constexpr size_t kInlinePayloadBytes = 512;
  // A slot holds any packet header, or a DATA header and an inline payload.
  static constexpr size_t kSlotBytes =
      std::max(wire::kMaxHeaderBytes, wire::kDataHeaderBytes + kInlinePayloadBytes);
  // The shortest head a held batch sends early (see HeadPackets).
  static constexpr size_t kMinHeldPackets = 16;

  // Counts packets_sent, batched_flushes, batch_cuts, tx_dropped and
  // send_errors into `stats`. Control packets go at `control_priority`.
  TxBatcher(transport::Datagram* net, uint8_t control_priority, HomaStats* stats);
  TxBatcher(const TxBatcher&) = delete;
  TxBatcher& operator=(const TxBatcher&) = delete;

  // Between Begin and the matching End (they nest) the batch is held:
  // FlushUnlessHeld keeps what it has, but for the head. An unmatched End
  // does nothing.
  void Begin() {
    if (depth_++ == 0) cut_ = false;
  }
  void End();
  bool held() const { return depth_ > 0; }

  // After a call that added packets: sends the batch unless it is held; a
  // held batch sends its head once it has HeadPackets(window) packets (once
  // per batch). `window`: the most RPCs the host had unanswered lately.
  void FlushUnlessHeld(size_t window);
  // Sends the batch if it borrows message bytes: before anything frees a
  // message, while a batch is held.
  void FlushBorrowed() {
    if (borrowed_ > 0) Flush();
  }
  // Hands every packet to the socket now. A datagram the socket refuses is
  // dropped (counted): the protocol's resend machinery recovers it as any
  // loss.
  void Flush();

  // Adds a DATA packet: `common` and `data` encoded, then `payload` (copied
  // when short, else borrowed: it must stay valid until the batch leaves),
  // asking for its transmit stamp when `departure_token` is not 0.
  // (Inline: one call per DATA packet, on the caller's headers.)
  void AddData(const transport::NetAddress& to, const wire::CommonHeader& common,
               const wire::DataHeader& data, std::span<const std::byte> payload, uint8_t priority,
               uint64_t departure_token = 0) {
    std::span<std::byte> slot = NextSlot();
    // The slot holds any header, so this cannot fail.
    (void)wire::EncodeDataHeader(common, data, slot);
    if (payload.size() <= kInlinePayloadBytes) {
      if (!payload.empty()) {
        std::memcpy(slot.data() + wire::kDataHeaderBytes, payload.data(), payload.size());
      }
      batch_.push_back({.to = to,
                        .bytes = slot.first(wire::kDataHeaderBytes + payload.size()),
                        .priority = priority,
                        .departure_token = departure_token});
    } else {
      // Gather send: the payload goes out from the message itself, uncopied.
      batch_.push_back({.to = to,
                        .bytes = slot.first(wire::kDataHeaderBytes),
                        .priority = priority,
                        .payload = payload,
                        .departure_token = departure_token});
      ++borrowed_;
    }
  }
  // Adds a control packet of type body's, at the control priority.
  void AddControl(const transport::NetAddress& to, uint16_t sport, uint16_t dport, uint64_t rpc_id,
                  const wire::Body& body, uint8_t flags = 0);

  // How many packets a held batch sends early, given `window` unanswered
  // RPCs: the head of a burst reaches the peer while its tail is still being
  // made, so both hosts work at once (bursts held whole travel as one convoy
  // that each host serves while the other waits: 64 B RPCs, 32 in flight,
  // managed, 420k -> 570k RPC/s on a 2-CPU VM). Half the window, at least
  // kMinHeldPackets and at most a whole batch: two halves keep both hosts
  // busy, and a longer head saves sends where the peer has work queued
  // anyway (managed, 64 B RPCs, best fixed head by RPCs in flight: 16 at 32,
  // 32 at 64, 64 at 128 and 256). One cut per batch: more cost a send each.
  static size_t HeadPackets(size_t window) {
    return std::clamp<size_t>(window / 2, kMinHeldPackets, kMaxPackets);
  }

  size_t size() const { return batch_.size(); }
  size_t borrowed() const { return borrowed_; }

 private:
  // The room for the next packet's header part (flushing a full batch).
  std::span<std::byte> NextSlot();

  transport::Datagram* const net_;
  const uint8_t control_priority_;
  HomaStats* const stats_;

  // Header parts (and inline payloads), packed: each starts where the one
  // before ended, so a run of short datagrams is one contiguous range, which
  // the socket hands the kernel as one iovec. kMaxPackets slots of kSlotBytes.
  std::vector<std::byte> buffer_;
  // The batch: views into buffer_, and payloads borrowed from messages.
  std::vector<transport::OutDatagram> batch_;
  size_t borrowed_ = 0;  // entries of batch_ with a borrowed payload
  int depth_ = 0;        // Begin nesting
  bool cut_ = false;     // this held batch's head has left
};

}  // namespace wharf::homa
