// Placement arithmetic for the region drawn in layout.h.
#include "shm/layout.h"

#include <bit>
#include <cstring>
#include <string>

namespace wharf::shm {
namespace {

constexpr uint64_t RoundUpToPage(uint64_t bytes) {
  return (bytes + kPageBytes - 1) / kPageBytes * kPageBytes;
}

// Bytes a ring of `entries` slots occupies, rounded up to a page. Cannot
// overflow: entries <= kMaxRingEntries was checked first.
constexpr uint64_t RingSectionBytes(uint32_t entries) {
  return RoundUpToPage(sizeof(RingControl) + uint64_t{entries} * sizeof(Descriptor));
}

Status CheckRingEntries(std::string_view ring, uint32_t entries) {
  if (entries < kMinRingEntries || entries > kMaxRingEntries || !std::has_single_bit(entries)) {
    return InvalidArgumentError(std::string(ring) + " ring: " + std::to_string(entries) +
                                " entries; must be a power of two in [" +
                                std::to_string(kMinRingEntries) + ", " +
                                std::to_string(kMaxRingEntries) + "]");
  }
  return OkStatus();
}

}  // namespace

std::string_view OpcodeName(Opcode opcode) {
  switch (opcode) {
    case Opcode::kInvalid: return "INVALID";
    case Opcode::kNop: return "NOP";
    case Opcode::kSend: return "SEND";
    case Opcode::kRecv: return "RECV";
    case Opcode::kCancel: return "CANCEL";
    case Opcode::kCall: return "CALL";
    case Opcode::kConnect: return "CONNECT";
    case Opcode::kListen: return "LISTEN";
    case Opcode::kAccept: return "ACCEPT";
    case Opcode::kDisconnect: return "DISCONNECT";
    case Opcode::kReleaseConn: return "RELEASE_CONN";
    case Opcode::kBarrier: return "BARRIER";
    case Opcode::kServe: return "SERVE";
    case Opcode::kRespond: return "RESPOND";
    case Opcode::kReleaseBuffer: return "RELEASE_BUFFER";
    case Opcode::kAddPeer: return "ADD_PEER";
    case Opcode::kCompletion: return "COMPLETION";
    case Opcode::kRequest: return "REQUEST";
    case Opcode::kCallCancelled: return "CALL_CANCELLED";
    case Opcode::kSendReleased: return "SEND_RELEASED";
    case Opcode::kPeerName: return "PEER_NAME";
    case Opcode::kFault: return "FAULT";
    case Opcode::kRegionAsk: return "REGION_ASK";
    case Opcode::kRegionRead: return "REGION_READ";
    case Opcode::kRegionWrite: return "REGION_WRITE";
    case Opcode::kRegionAtomic: return "REGION_ATOMIC";
    case Opcode::kRegionRelease: return "REGION_RELEASE";
    case Opcode::kRegionEvent: return "REGION_EVENT";
    case Opcode::kRegionLend: return "REGION_LEND";
    case Opcode::kRegionRevoke: return "REGION_REVOKE";
  }
  return "UNKNOWN";
}

Result<Layout> ComputeLayout(const Geometry& geometry) {
  WHARF_RETURN_IF_ERROR(CheckRingEntries("command", geometry.command_entries));
  WHARF_RETURN_IF_ERROR(CheckRingEntries("completion", geometry.completion_entries));
  if (geometry.heap_bytes == 0 || geometry.heap_bytes > kMaxHeapBytes ||
      geometry.heap_bytes % kPageBytes != 0) {
    return InvalidArgumentError(
        "heap: " + std::to_string(geometry.heap_bytes) + " bytes; must be a non-zero multiple of " +
        std::to_string(kPageBytes) + " up to " + std::to_string(kMaxHeapBytes));
  }
  Layout layout;
  layout.geometry = geometry;
  uint64_t next = sizeof(RegionHeader);
  for (auto [record, entries] : {std::pair{&layout.command, geometry.command_entries},
                                 std::pair{&layout.completion, geometry.completion_entries}}) {
    record->control_offset = next;
    record->slots_offset = next + sizeof(RingControl);
    record->entries = entries;
    record->entry_bytes = sizeof(Descriptor);
    next += RingSectionBytes(entries);
  }
  layout.heap_offset = next;
  layout.heap_bytes = geometry.heap_bytes;
  layout.total_bytes = next + geometry.heap_bytes;
  return layout;
}

RegionHeader MakeHeader(const Layout& layout) {
  RegionHeader header;
  std::memset(&header, 0, sizeof(header));
  header.magic = kRegionMagic;
  header.layout_version = kLayoutVersion;
  header.header_bytes = sizeof(RegionHeader);
  header.total_bytes = layout.total_bytes;
  header.command = layout.command;
  header.completion = layout.completion;
  header.heap_offset = layout.heap_offset;
  header.heap_bytes = layout.heap_bytes;
  return header;
}

}  // namespace wharf::shm
