// shm/commands.h: what each ring entry's fields mean in managed mode: the
// commands an application writes to the command ring and the entries wharfd
// writes to the completion ring (layout.h has the Descriptor and the opcode
// numbers). This is the data-path contract between libwharf
// (client/managed_engine.h) and wharfd (daemon/app_session.h); the control
// path (attach, stats) is in attach_protocol.h.
//
// Heap ranges: (heap_offset, length) from the start of the heap. The heap's
// first half is the application's send area: it allocates there privately
// and wharfd only reads. The second half is the receive area: wharfd
// allocates received messages there with its own private allocator, and the
// application gives each range back with kReleaseBuffer once its Buffer is
// dropped. An entry with length 0 names no range (nothing to release).
//
// Deadlines are absolute CLOCK_MONOTONIC nanoseconds (both sides run on one
// host; 0 or UINT64_MAX: none).
//
// Commands (application -> wharfd). `cookie` is the application's operation
// id: nonzero, below 2^63; the operation ends in exactly one kCompletion
// with it. Fields not listed are zero.
//   kNop           cookie
//   kSend          cookie, handle = connection, range = message
//   kRecv          cookie, handle = connection
//   kCancel        handle = the cookie of the operation to cancel
//   kCall          cookie, handle = connection, or a peer handle with
//                  kFlagToPeer; status = method; aux[0] = deadline;
//                  range = request
//   kConnect       cookie, handle = peer handle, flags kFlagOrdered;
//                  aux[0] = deadline; status = a stream's method (0: a
//                  plain connection)
//   kListen        (nothing)
//   kAccept        cookie, aux[0] = deadline; flags kFlagStream: takes the
//                  next stream rather than the next plain connection
//   kDisconnect    cookie, handle = connection
//   kReleaseConn   handle = connection
//   kBarrier       cookie, handle = coordinator's peer handle, flags
//                  kFlagCoordinator; status = members; aux[0] = deadline,
//                  aux[1] = group, aux[2] = round
//   kServe         status = method, flags kFlagServed (absent: stop serving),
//                  kFlagStream: streams of the method rather than its calls
//   kRespond       handle = request handle (from kRequest); status = a
//                  StatusCode; range = the response, or the error's text
//   kReleaseBuffer range = exactly a range wharfd delivered; aux[0..2] =
//                  the start offsets of up to three more such ranges (0:
//                  none), released too
//   kAddPeer       handle = peer handle (< kMaxPeerHandles, chosen by the
//                  application), aux[0..2] = the address (engine::PackUri)
// Remote memory (wharf/remote_memory.h; the application's endpoint is
// ucx://). The region handles are its engine's.
//   kRegionAsk     cookie, handle = peer handle; aux[0] = size, aux[1] =
//                  alignment | access bits << 32, aux[2] = lifetime (ms).
//                  Completes with handle = the region's handle
//   kRegionRead    cookie, handle = region handle, aux[0] = offset in the
//                  region; range = where the bytes go, in the send area:
//                  wharfd writes there until the completion (the one
//                  command that does), which carries kFlagSendReleased
//   kRegionWrite   cookie, handle = region handle, aux[0] = offset; flags
//                  kFlagImmediate: aux[1] = the value the lender then gets
//                  as an event; range = the bytes (a payload, as kSend's)
//   kRegionAtomic  cookie, handle = region handle, aux[0] = offset (8-
//                  aligned), aux[1] = the value to add, or with
//                  kFlagCompareSwap the value to store where aux[2] is.
//                  Completes with handle = the word as it was
//   kRegionRelease handle = region handle (a kFault when not held)
//   kRegionLend    cookie, handle = peer handle; range = the memory to lend,
//                  in the send area (the holder then writes into it);
//                  aux[0] = access bits, aux[1] = lifetime (ms). Completes
//                  with handle = the region's id
//   kRegionRevoke  handle = the id of a region it lent (a kFault when not)
//
// Completion-ring entries (wharfd -> application):
//   kCompletion    cookie, status = StatusCode, handle = value (connection
//                  id for kConnect / kAccept; an accept's range is the
//                  peer's address, after the stream's method as 4 bytes
//                  big-endian for a kFlagStream one); range = the received message
//                  or response, or for a failure the error's text; flags
//                  kFlagSendReleased: the operation's payload range is
//                  released as by a kSendReleased (which then never comes)
//   kRequest       handle = request handle, status = method, aux[0] =
//                  deadline, aux[1] = peer name id; range = the request
//   kCallCancelled handle = request handle
//   kSendReleased  cookie: wharfd will not read that operation's payload
//                  range again; the application may reuse it. aux[0..2]:
//                  up to three more such cookies (0: none)
//   kPeerName      handle = peer name id; range = its address text. Sent
//                  before the first kRequest naming it; an id may be
//                  reused with a new text later.
//   kFault         status = StatusCode, aux[0] = the opcode refused;
//                  range = why. For commands that have no operation to fail
//                  (kRespond to an unknown handle, a bad kReleaseBuffer...).
//   kRegionEvent   status = what happened (kRegionEvent* below), handle =
//                  the region: a held region's handle (lent, released), or
//                  the id of one the application's endpoint lent (immediate,
//                  returned). Immediate: cookie = the value, aux[0] =
//                  offset, aux[1] = length; range = the whole region, in the
//                  receive area: the holder's bytes, in place (the
//                  application reads it and never releases it; wharfd takes
//                  it back after the region's kRegionEventReturned). Lent:
//                  aux[0] = size, aux[1] = access bits, aux[2] = its
//                  lifetime left (ms).
#pragma once

#include <cstdint>

namespace wharf::shm {

// Descriptor.flags bits.
inline constexpr uint16_t kFlagToPeer = 1 << 0;       // kCall: handle is a peer handle
inline constexpr uint16_t kFlagOrdered = 1 << 1;      // kConnect
inline constexpr uint16_t kFlagCoordinator = 1 << 2;  // kBarrier
inline constexpr uint16_t kFlagServed = 1 << 3;       // kServe
inline constexpr uint16_t kFlagStream = 1 << 4;       // kServe, kAccept
inline constexpr uint16_t kFlagImmediate = 1 << 5;    // kRegionWrite
inline constexpr uint16_t kFlagCompareSwap = 1 << 6;  // kRegionAtomic
inline constexpr uint16_t kKnownCommandFlags = kFlagToPeer | kFlagOrdered | kFlagCoordinator |
                                               kFlagServed | kFlagStream | kFlagImmediate |
                                               kFlagCompareSwap;
// kCompletion (wharfd -> application): the payload was released as well.
inline constexpr uint16_t kFlagSendReleased = 1 << 0;

// kRegionEvent.status: what happened (transport::RegionEvent::Kind's order).
inline constexpr uint32_t kRegionEventImmediate = 0;
inline constexpr uint32_t kRegionEventLent = 1;
inline constexpr uint32_t kRegionEventReleased = 2;
inline constexpr uint32_t kRegionEventReturned = 3;

// Peer handles an application may name (kAddPeer); wharfd's table of them is
// this big at most.
inline constexpr uint64_t kMaxPeerHandles = 4096;
// Peer name ids wharfd hands out before reusing them.
inline constexpr uint64_t kMaxPeerNames = 4096;
// Longest error text carried in a completion.
inline constexpr uint64_t kMaxErrorText = 512;

}  // namespace wharf::shm
