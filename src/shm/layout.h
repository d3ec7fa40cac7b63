// shm/layout.h: the bytes of the shared-memory region one application shares
// with wharfd, and the pure arithmetic that places them. No I/O, no state:
// region.h maps the bytes, spsc_ring.h moves descriptors through the rings,
// validator.h checks what the other side wrote. docs/shm.md explains why.
//
// Nothing in the region is a pointer: every position is a byte offset from
// the start of the region, because each process maps it at its own address.
// Integers are in host byte order (both sides run on the same host).
//
//   offset 0                                                   total_bytes
//   +-------------+----------------------+----------------------+-----------+
//   | header page | command ring         | completion ring      | heap      |
//   |  4096 B     |  app -> daemon       |  daemon -> app       | app's     |
//   |             |                      |                      | messages  |
//   +-------------+----------------------+----------------------+-----------+
//                 ^ command.control_offset  ^ completion.          ^ heap_offset
//                                            control_offset
//
//   header page (RegionHeader, 4096 B)
//     0  magic u64            kRegionMagic ("WHARFSHM" read as little-endian)
//     8  layout_version u32   kLayoutVersion
//    12  header_bytes u32     sizeof(RegionHeader)
//    16  total_bytes u64      size of the whole region (= the memfd's size)
//    24  command    RingRecord (24 B): control_offset u64, slots_offset u64,
//                              entries u32, entry_bytes u32
//    48  completion RingRecord (24 B)
//    72  heap_offset u64      where the heap starts
//    80  heap_bytes u64       how long it is
//    88  reserved, zero, up to 4096
//
//   each ring (starts page-aligned; its length is rounded up to a page)
//     +0    RingControl.producer  one cache line, written only by the producer:
//             +0  value u64       the producer index
//             +8  waiting u32     unused, zero
//             +12 idle u32        unused, zero
//     +64   RingControl.consumer  one cache line, written only by the consumer:
//             +64 value u64       the consumer index
//             +72 waiting u32     non-zero: the consumer is about to sleep on
//                                 its doorbell (spsc_ring.h SetWaiting)
//             +76 idle u32        non-zero: the consumer waits for entries
//                                 with nothing else to do (SetIdle)
//     +128  slots: entries x Descriptor (64 B each); slot of index i is
//           slots[i & (entries - 1)]
//
//   Descriptor (64 B)
//     0 opcode u16 | 2 flags u16 | 4 status u32 | 8 cookie u64 | 16 handle u64
//     24 heap_offset u64 | 32 length u64 | 40 aux[0..3) u64
//
//   heap: heap_bytes of message bytes owned by the application. Descriptors
//   name a range of it by (heap_offset, length), heap_offset counted from
//   the start of the heap (not the region).
//
// The header is written once by the creator and never changes. Each side
// computes the Layout from the Geometry it agreed on (ComputeLayout) and
// keeps that private copy; the header in shared memory is only checked
// against it (validator.h), never trusted after setup.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string_view>
#include <type_traits>

#include "wharf/result.h"

namespace wharf::shm {

// "WHARFSHM" as the bytes of a little-endian u64.
inline constexpr uint64_t kRegionMagic = 0x4D48534652414857ull;
// Bumped on any change to the bytes drawn above or to what ring entries mean
// (commands.h). 2: RingIndex.waiting. 3: batched releases (kReleaseBuffer
// and kSendReleased aux fields, kFlagSendReleased on kCompletion). 4:
// RingIndex.idle. 5: remote memory (kRegion* commands, kRegionEvent).
inline constexpr uint32_t kLayoutVersion = 5;

inline constexpr size_t kCacheLineBytes = 64;
// Sections start on page boundaries so each can be mapped, locked or
// protected on its own later; 4096 is the smallest page Linux uses.
inline constexpr uint64_t kPageBytes = 4096;

// Limits ComputeLayout accepts; they keep every offset far from overflow
// (the largest region is ~1 TiB + 2 x 64 MiB).
inline constexpr uint32_t kMinRingEntries = 2;
inline constexpr uint32_t kMaxRingEntries = 1u << 20;
inline constexpr uint64_t kMaxHeapBytes = 1ull << 40;

// What a ring entry asks for or reports. Values are stable: they are in
// shared memory. shm/commands.h says what each one's fields mean.
enum class Opcode : uint16_t {
  kInvalid = 0,  // a zeroed slot; never valid, so an unwritten slot is caught
  kNop = 1,      // does nothing; completed with OK (tests, benchmarks, probes)
  // Commands: application -> daemon (command ring).
  kSend = 2,            // send a message on a connection
  kRecv = 3,            // receive the next message of a connection
  kCancel = 4,          // cancel an operation
  kCall = 7,            // an RPC, to a peer or on a connection
  kConnect = 8,         // open a connection to a peer
  kListen = 9,          // accept connections from now on
  kAccept = 10,         // wait for the next incoming connection
  kDisconnect = 11,     // close a connection, telling the peer
  kReleaseConn = 12,    // forget a connection the application dropped
  kBarrier = 13,        // arrive at a group barrier
  kServe = 14,          // start or stop serving a method
  kRespond = 15,        // answer a served request
  kReleaseBuffer = 16,  // give a received heap range back to the daemon
  kAddPeer = 17,        // name a peer address by a small handle
  kRegionAsk = 23,      // ask a peer for a region of its memory
  kRegionRead = 24,     // read from a held region into the send area
  kRegionWrite = 25,    // write to a held region (optionally with an immediate)
  kRegionAtomic = 26,   // fetch-add or compare-and-swap a word of a held region
  kRegionRelease = 27,  // give a held region back
  kRegionLend = 29,     // lend a peer a range of the send area
  kRegionRevoke = 30,   // end a region the application lent
  // Completions: daemon -> application (completion ring).
  kCompletion = 5,    // an operation finished
  kRequest = 18,      // a request for a served method arrived
  kCallCancelled = 19,  // its client withdrew a request
  kSendReleased = 20,   // the daemon no longer reads an operation's payload
  kPeerName = 21,       // the address text of a peer name id
  kFault = 22,          // a command was refused (no operation to fail)
  kRegionEvent = 28,    // something happened to one of the application's regions
};
// Opcodes are below this; the validator's opcode set is sized by it.
inline constexpr uint16_t kOpcodeLimit = 64;

// "NOP", "SEND", ...; "UNKNOWN" for values outside the enum.
std::string_view OpcodeName(Opcode opcode);

// One ring entry: a fixed-size command or completion. Plain bytes: copied
// into and out of the ring, never referenced in place by the side that
// reads it (a peer may change the slot while we look at it).
struct Descriptor {
  uint16_t opcode;       // an Opcode value
  uint16_t flags;        // opcode-specific bits; none are defined yet
  uint32_t status;       // completions: a StatusCode; commands: zero
  uint64_t cookie;       // chosen by the app, echoed in the completion
  uint64_t handle;       // the connection/RPC the entry is about
  uint64_t heap_offset;  // start of the payload, from the start of the heap
  uint64_t length;       // payload bytes at heap_offset
  uint64_t aux[3];       // opcode-specific arguments
};
static_assert(std::is_trivially_copyable_v<Descriptor>);
static_assert(std::is_standard_layout_v<Descriptor>);
static_assert(sizeof(Descriptor) == 64);
static_assert(offsetof(Descriptor, opcode) == 0);
static_assert(offsetof(Descriptor, flags) == 2);
static_assert(offsetof(Descriptor, status) == 4);
static_assert(offsetof(Descriptor, cookie) == 8);
static_assert(offsetof(Descriptor, handle) == 16);
static_assert(offsetof(Descriptor, heap_offset) == 24);
static_assert(offsetof(Descriptor, length) == 32);
static_assert(offsetof(Descriptor, aux) == 40);

// One ring index on a cache line of its own, so the producer's stores and
// the consumer's stores never contend for the same line. Both words are only
// ever accessed through std::atomic_ref (spsc_ring.cc).
struct alignas(kCacheLineBytes) RingIndex {
  uint64_t value;    // monotonically increasing count of entries; never wraps
  uint32_t waiting;  // consumer's line: non-zero while it is going to sleep
                     // (the sleep/wake protocol in spsc_ring.h); producer's
                     // line: unused, zero
  uint32_t idle;     // consumer's line: non-zero while it spins waiting for
                     // entries with no work of its own (a hint for a
                     // producer sharing its CPU, spsc_ring.h SetIdle);
                     // producer's line: unused, zero
  uint8_t reserved[kCacheLineBytes - sizeof(uint64_t) - 2 * sizeof(uint32_t)];
};
static_assert(sizeof(RingIndex) == kCacheLineBytes);
static_assert(offsetof(RingIndex, value) == 0);
static_assert(offsetof(RingIndex, waiting) == 8);
static_assert(offsetof(RingIndex, idle) == 12);

struct RingControl {
  RingIndex producer;  // entries ever pushed; written by the producer only
  RingIndex consumer;  // entries ever popped; written by the consumer only
};
static_assert(std::is_standard_layout_v<RingControl>);
static_assert(sizeof(RingControl) == 2 * kCacheLineBytes);
static_assert(offsetof(RingControl, producer) == 0);
static_assert(offsetof(RingControl, consumer) == kCacheLineBytes);

// Where one ring sits, as recorded in the header and in a Layout.
struct RingRecord {
  uint64_t control_offset;  // RingControl, from the region start
  uint64_t slots_offset;    // slot 0, from the region start
  uint32_t entries;         // slots; a power of two
  uint32_t entry_bytes;     // sizeof(Descriptor)
};
static_assert(sizeof(RingRecord) == 24);
static_assert(offsetof(RingRecord, slots_offset) == 8);
static_assert(offsetof(RingRecord, entries) == 16);
static_assert(offsetof(RingRecord, entry_bytes) == 20);

// The header page. Written once by Region::Create.
struct RegionHeader {
  uint64_t magic;           // kRegionMagic
  uint32_t layout_version;  // kLayoutVersion
  uint32_t header_bytes;    // sizeof(RegionHeader)
  uint64_t total_bytes;     // the region's size
  RingRecord command;       // app -> daemon
  RingRecord completion;    // daemon -> app
  uint64_t heap_offset;     // from the region start
  uint64_t heap_bytes;
  uint8_t reserved[kPageBytes - 88];  // zero
};
static_assert(std::is_trivially_copyable_v<RegionHeader>);
static_assert(std::is_standard_layout_v<RegionHeader>);
static_assert(sizeof(RegionHeader) == kPageBytes);
static_assert(offsetof(RegionHeader, magic) == 0);
static_assert(offsetof(RegionHeader, layout_version) == 8);
static_assert(offsetof(RegionHeader, header_bytes) == 12);
static_assert(offsetof(RegionHeader, total_bytes) == 16);
static_assert(offsetof(RegionHeader, command) == 24);
static_assert(offsetof(RegionHeader, completion) == 48);
static_assert(offsetof(RegionHeader, heap_offset) == 72);
static_assert(offsetof(RegionHeader, heap_bytes) == 80);
static_assert(offsetof(RegionHeader, reserved) == 88);

// What the two sides agree on (over the attach socket); everything else
// follows from it.
struct Geometry {
  uint32_t command_entries = 256;     // power of two
  uint32_t completion_entries = 256;  // power of two
  uint64_t heap_bytes = 1ull << 20;   // multiple of kPageBytes

  friend bool operator==(const Geometry&, const Geometry&) = default;
};

// The placement of every section, computed from a Geometry. Each process
// keeps its own copy and uses only it for offsets and capacities.
struct Layout {
  Geometry geometry;
  uint64_t total_bytes = 0;
  RingRecord command{};
  RingRecord completion{};
  uint64_t heap_offset = 0;
  uint64_t heap_bytes = 0;
};

// Checks the geometry against the limits above and places the sections.
// kInvalidArgument names the offending field and limit.
Result<Layout> ComputeLayout(const Geometry& geometry);

// The header the creator writes for `layout` (reserved bytes zero).
RegionHeader MakeHeader(const Layout& layout);

}  // namespace wharf::shm
