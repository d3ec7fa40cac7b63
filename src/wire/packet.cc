// wire/packet.cc: Decode, Encode and EncodeDataHeader for the layouts drawn in
// packet.h, plus PacketTypeName. Describe/DescribeVerbose live in describe.cc.
//
// Decode and Encode share one set of field rules (the Check* functions
// below), so anything Encode accepts decodes back to the same fields, and
// anything Decode accepts re-encodes. The fuzzer relies on that symmetry.
#include "wire/packet.h"

#include <cstring>
#include <iterator>
#include <string>
#include <type_traits>
#include <utility>
#include <variant>

#include "wire/byte_order.h"

namespace wharf::wire {
namespace {

// Byte offsets of every field, as drawn in packet.h.
constexpr size_t kOffVersion = 0;
constexpr size_t kOffType = 1;
constexpr size_t kOffFlags = 2;
constexpr size_t kOffReserved = 3;
constexpr size_t kOffSport = 4;
constexpr size_t kOffDport = 6;
constexpr size_t kOffRpcId = 8;

constexpr size_t kOffDataMessageLength = 16;
constexpr size_t kOffDataOffset = 20;
constexpr size_t kOffDataIncoming = 24;
constexpr size_t kOffDataCutoffVersion = 28;
constexpr size_t kOffDataAckServerPort = 30;
constexpr size_t kOffDataAckClientId = 32;
constexpr size_t kOffDataAckFloor = 40;

constexpr size_t kOffGrantOffset = 16;
constexpr size_t kOffGrantPriority = 20;
constexpr size_t kOffGrantFlags = 21;
constexpr size_t kOffGrantPad = 22;

constexpr size_t kOffResendOffset = 16;
constexpr size_t kOffResendLength = 20;
constexpr size_t kOffResendPriority = 24;
constexpr size_t kOffResendPad = 25;

constexpr size_t kOffCutoffs = 16;
constexpr size_t kOffCutoffsVersion = 48;
constexpr size_t kOffCutoffsPad = 50;

constexpr size_t kOffAckCount = 16;
constexpr size_t kOffAckPad = 18;
constexpr size_t kOffAckEntries = 20;
// Within one ACK entry.
constexpr size_t kOffEntryClientId = 0;
constexpr size_t kOffEntryServerPort = 8;
constexpr size_t kOffEntryPad = 10;

// The drawing and the size constants in packet.h must agree.
static_assert(kOffRpcId + 8 == kCommonHeaderBytes);
static_assert(kOffDataAckFloor + 8 == kDataHeaderBytes);
static_assert(kOffGrantPad + 2 == kGrantBytes);
static_assert(kOffResendPad + 3 == kResendBytes);
static_assert(kOffCutoffs + 4 * size_t{kNumPriorities} == kOffCutoffsVersion);
static_assert(kOffCutoffsPad + 2 == kCutoffsBytes);
static_assert(kOffAckEntries == kAckHeaderBytes);
static_assert(kOffEntryPad + 2 == kAckEntryBytes);

// Body alternatives in variant order, so that a Body's index names its type.
constexpr PacketType kBodyTypes[] = {
    PacketType::kData, PacketType::kGrant,   PacketType::kResend,  PacketType::kRpcUnknown,
    PacketType::kBusy, PacketType::kCutoffs, PacketType::kNeedAck, PacketType::kAck,
};
static_assert(std::size(kBodyTypes) == std::variant_size_v<Body>);
static_assert(std::is_same_v<std::variant_alternative_t<0, Body>, Data>);
static_assert(std::is_same_v<std::variant_alternative_t<7, Body>, AckList>);

bool IsKnownType(uint8_t raw) {
  for (PacketType t : kBodyTypes) {
    if (static_cast<uint8_t>(t) == raw) return true;
  }
  return false;
}

// Smallest valid size of each type: the whole packet for fixed-size types,
// the header for DATA (payload follows) and ACK (entries follow).
size_t HeaderBytes(PacketType type) {
  switch (type) {
    case PacketType::kData:
      return kDataHeaderBytes;
    case PacketType::kGrant:
      return kGrantBytes;
    case PacketType::kResend:
      return kResendBytes;
    case PacketType::kCutoffs:
      return kCutoffsBytes;
    case PacketType::kAck:
      return kAckHeaderBytes;
    case PacketType::kRpcUnknown:
    case PacketType::kBusy:
    case PacketType::kNeedAck:
      return kCommonHeaderBytes;
  }
  return kCommonHeaderBytes;
}

bool IsFixedSize(PacketType type) { return type != PacketType::kData && type != PacketType::kAck; }

// A byte shown in hex ("0x02") in an error message.
struct Hex {
  uint8_t value;
};

void AppendPart(std::string& msg, std::string_view part) { msg += part; }
void AppendPart(std::string& msg, uint64_t part) { msg += std::to_string(part); }
void AppendPart(std::string& msg, Hex part) {
  static constexpr char kDigits[] = "0123456789abcdef";
  msg += "0x";
  msg += kDigits[part.value >> 4];
  msg += kDigits[part.value & 0xf];
}

// The InvalidArgument error whose message is the concatenation of `parts`.
// Out of line and cold: the checks below then inline into a few compares on
// the per-packet path, and only a malformed packet pays for formatting.
template <typename... Parts>
[[gnu::cold, gnu::noinline]] Status Invalid(const Parts&... parts) {
  std::string msg;
  (AppendPart(msg, parts), ...);
  return InvalidArgumentError(std::move(msg));
}

// Field rules shared by Decode and Encode. Errors start with the packet type.

inline Status CheckFlags(PacketType type, uint8_t flags) {
  if ((flags & ~kKnownFlags) != 0) [[unlikely]] {
    return Invalid(PacketTypeName(type), ": unknown flag bits ",
                   Hex{static_cast<uint8_t>(flags & ~kKnownFlags)}, " in flags ", Hex{flags});
  }
  return OkStatus();
}

// incoming is a promise about this message's bytes, so it cannot pass its end.
inline Status CheckIncoming(const DataHeader& h) {
  if (h.incoming > h.message_length) [[unlikely]] {
    return Invalid("DATA: incoming ", h.incoming, " exceeds message_length ", h.message_length);
  }
  return OkStatus();
}

inline Status CheckData(const DataHeader& h, size_t payload_bytes) {
  // Written so that nothing can overflow: payload_bytes is compared against
  // message_length before it is subtracted from it.
  if (payload_bytes > h.message_length || h.offset > h.message_length - payload_bytes)
      [[unlikely]] {
    return Invalid("DATA: offset ", h.offset, " + payload ", payload_bytes,
                   " exceeds message_length ", h.message_length);
  }
  WHARF_RETURN_IF_ERROR(CheckIncoming(h));
  if (payload_bytes == 0 && h.message_length != 0) [[unlikely]] {
    return Invalid("DATA: empty payload at offset ", h.offset, " of a ", h.message_length,
                   "-byte message (only a zero-length message has an empty DATA)");
  }
  return OkStatus();
}

// The parts of CheckData that EncodeDataHeader can check without the payload.
inline Status CheckDataHeaderOnly(const DataHeader& h) {
  if (h.offset > h.message_length) [[unlikely]] {
    return Invalid("DATA: offset ", h.offset, " exceeds message_length ", h.message_length);
  }
  return CheckIncoming(h);
}

inline Status CheckPriority(PacketType type, uint8_t priority) {
  if (priority >= kNumPriorities) [[unlikely]] {
    return Invalid(PacketTypeName(type), ": priority ", priority, " exceeds ",
                   uint64_t{kNumPriorities - 1});
  }
  return OkStatus();
}

inline Status CheckGrant(const Grant& g) {
  WHARF_RETURN_IF_ERROR(CheckPriority(PacketType::kGrant, g.priority));
  if ((g.flags & ~kGrantResendAll) != 0) [[unlikely]] {
    return Invalid("GRANT: unknown grant flag bits ",
                   Hex{static_cast<uint8_t>(g.flags & ~kGrantResendAll)}, " in flags ",
                   Hex{g.flags});
  }
  return OkStatus();
}

inline Status CheckAckCount(uint16_t count) {
  if (count > kMaxAcksPerPacket) [[unlikely]] {
    return Invalid("ACK: count ", count, " exceeds ", kMaxAcksPerPacket);
  }
  return OkStatus();
}

// Writers. Each writes every byte of its range, pad bytes as zero, so that a
// reused send buffer never leaks old contents onto the wire.

void WriteCommon(const CommonHeader& c, std::byte* p) {
  StoreU8(p + kOffVersion, kProtocolVersion);
  StoreU8(p + kOffType, static_cast<uint8_t>(c.type));
  StoreU8(p + kOffFlags, c.flags);
  StoreU8(p + kOffReserved, 0);
  StoreU16(p + kOffSport, c.sport);
  StoreU16(p + kOffDport, c.dport);
  StoreU64(p + kOffRpcId, c.rpc_id);
}

void WriteDataHeader(const CommonHeader& c, const DataHeader& h, std::byte* p) {
  WriteCommon(c, p);
  StoreU32(p + kOffDataMessageLength, h.message_length);
  StoreU32(p + kOffDataOffset, h.offset);
  StoreU32(p + kOffDataIncoming, h.incoming);
  StoreU16(p + kOffDataCutoffVersion, h.cutoff_version);
  StoreU16(p + kOffDataAckServerPort, h.ack.server_port);
  StoreU64(p + kOffDataAckClientId, h.ack.client_id);
  StoreU64(p + kOffDataAckFloor, h.ack_floor);
}

DataHeader ReadDataHeader(const std::byte* p) {
  DataHeader h;
  h.message_length = LoadU32(p + kOffDataMessageLength);
  h.offset = LoadU32(p + kOffDataOffset);
  h.incoming = LoadU32(p + kOffDataIncoming);
  h.cutoff_version = LoadU16(p + kOffDataCutoffVersion);
  h.ack.server_port = LoadU16(p + kOffDataAckServerPort);
  h.ack.client_id = LoadU64(p + kOffDataAckClientId);
  h.ack_floor = LoadU64(p + kOffDataAckFloor);
  return h;
}

// Size the packet will have on the wire, after checking every field rule.
Result<size_t> CheckedEncodedSize(const Packet& packet) {
  const PacketType type = packet.common.type;
  WHARF_RETURN_IF_ERROR(CheckFlags(type, packet.common.flags));
  if (const auto* d = std::get_if<Data>(&packet.body)) {
    WHARF_RETURN_IF_ERROR(CheckData(d->header, d->payload.size()));
    return kDataHeaderBytes + d->payload.size();
  }
  if (const auto* g = std::get_if<Grant>(&packet.body)) {
    WHARF_RETURN_IF_ERROR(CheckGrant(*g));
  } else if (const auto* r = std::get_if<Resend>(&packet.body)) {
    WHARF_RETURN_IF_ERROR(CheckPriority(type, r->priority));
  } else if (const auto* a = std::get_if<AckList>(&packet.body)) {
    WHARF_RETURN_IF_ERROR(CheckAckCount(a->count));
    return kAckHeaderBytes + size_t{a->count} * kAckEntryBytes;
  }
  return HeaderBytes(type);
}

// The common header of `bytes` into `c`, with every common-header rule checked.
Status ReadCommon(std::span<const std::byte> bytes, CommonHeader& c) {
  if (bytes.size() < kCommonHeaderBytes) [[unlikely]] {
    return Invalid("packet of ", bytes.size(), " bytes is shorter than the ", kCommonHeaderBytes,
                   "-byte common header");
  }
  const std::byte* p = bytes.data();
  const uint8_t version = LoadU8(p + kOffVersion);
  if (version != kProtocolVersion) [[unlikely]] {
    return Invalid("unsupported protocol version ", version, " (expected ", kProtocolVersion, ")");
  }
  const uint8_t raw_type = LoadU8(p + kOffType);
  if (!IsKnownType(raw_type)) [[unlikely]] {
    return Invalid("unknown packet type ", Hex{raw_type});
  }
  c.type = static_cast<PacketType>(raw_type);
  c.flags = LoadU8(p + kOffFlags);
  WHARF_RETURN_IF_ERROR(CheckFlags(c.type, c.flags));
  c.sport = LoadU16(p + kOffSport);
  c.dport = LoadU16(p + kOffDport);
  c.rpc_id = LoadU64(p + kOffRpcId);
  return OkStatus();
}

// The body of a packet of `type` (whose common header is valid) into `body`.
Status ReadBody(std::span<const std::byte> bytes, PacketType type, Body& body) {
  const size_t header_bytes = HeaderBytes(type);
  if (bytes.size() < header_bytes) [[unlikely]] {
    return Invalid(PacketTypeName(type), ": packet of ", bytes.size(),
                   " bytes is shorter than the ", header_bytes, "-byte ", PacketTypeName(type),
                   " header");
  }
  if (IsFixedSize(type) && bytes.size() > header_bytes) [[unlikely]] {
    return Invalid(PacketTypeName(type), ": ", bytes.size() - header_bytes,
                   " trailing bytes after the ", header_bytes, "-byte packet");
  }
  const std::byte* p = bytes.data();
  switch (type) {
    case PacketType::kData: {
      Data& d = body.emplace<Data>();
      d.header = ReadDataHeader(p);
      d.payload = bytes.subspan(kDataHeaderBytes);
      return CheckData(d.header, d.payload.size());
    }
    case PacketType::kGrant: {
      Grant& g = body.emplace<Grant>();
      g.offset = LoadU32(p + kOffGrantOffset);
      g.priority = LoadU8(p + kOffGrantPriority);
      g.flags = LoadU8(p + kOffGrantFlags);
      return CheckGrant(g);
    }
    case PacketType::kResend: {
      Resend& r = body.emplace<Resend>();
      r.offset = LoadU32(p + kOffResendOffset);
      r.length = LoadU32(p + kOffResendLength);
      r.priority = LoadU8(p + kOffResendPriority);
      return CheckPriority(type, r.priority);
    }
    case PacketType::kRpcUnknown:
      body.emplace<RpcUnknown>();
      return OkStatus();
    case PacketType::kBusy:
      body.emplace<Busy>();
      return OkStatus();
    case PacketType::kNeedAck:
      body.emplace<NeedAck>();
      return OkStatus();
    case PacketType::kCutoffs: {
      Cutoffs& c = body.emplace<Cutoffs>();
      for (size_t i = 0; i < c.unsched_cutoffs.size(); ++i) {
        c.unsched_cutoffs[i] = LoadU32(p + kOffCutoffs + 4 * i);
      }
      c.version = LoadU16(p + kOffCutoffsVersion);
      return OkStatus();
    }
    case PacketType::kAck: {
      AckList& a = body.emplace<AckList>();
      a.count = LoadU16(p + kOffAckCount);
      WHARF_RETURN_IF_ERROR(CheckAckCount(a.count));
      const size_t expected = kAckHeaderBytes + size_t{a.count} * kAckEntryBytes;
      if (bytes.size() != expected) [[unlikely]] {
        return Invalid("ACK: packet of ", bytes.size(), " bytes, expected ", expected,
                       " for count ", a.count);
      }
      for (size_t i = 0; i < a.count; ++i) {
        const std::byte* e = p + kOffAckEntries + i * kAckEntryBytes;
        a.acks[i].client_id = LoadU64(e + kOffEntryClientId);
        a.acks[i].server_port = LoadU16(e + kOffEntryServerPort);
      }
      return OkStatus();
    }
  }
  // Unreachable: ReadCommon accepted only known types.
  return Invalid("unknown packet type ", Hex{static_cast<uint8_t>(type)});
}

}  // namespace

std::string_view PacketTypeName(PacketType type) {
  switch (type) {
    case PacketType::kData:
      return "DATA";
    case PacketType::kGrant:
      return "GRANT";
    case PacketType::kResend:
      return "RESEND";
    case PacketType::kRpcUnknown:
      return "RPC_UNKNOWN";
    case PacketType::kBusy:
      return "BUSY";
    case PacketType::kCutoffs:
      return "CUTOFFS";
    case PacketType::kNeedAck:
      return "NEED_ACK";
    case PacketType::kAck:
      return "ACK";
  }
  return "UNKNOWN";
}

Result<CommonHeader> DecodeCommonHeader(std::span<const std::byte> bytes) {
  CommonHeader common;
  WHARF_RETURN_IF_ERROR(ReadCommon(bytes, common));
  return common;
}

Result<Packet> Decode(std::span<const std::byte> bytes) {
  // Built in place and returned once: Packet is ~160 bytes (AckList's array
  // dominates), and extra copies of it are most of Decode's cost.
  Packet packet;
  WHARF_RETURN_IF_ERROR(ReadCommon(bytes, packet.common));
  WHARF_RETURN_IF_ERROR(ReadBody(bytes, packet.common.type, packet.body));
  return packet;
}

Result<size_t> Encode(const Packet& packet, std::span<std::byte> out) {
  const CommonHeader& common = packet.common;
  if (packet.body.valueless_by_exception()) {
    return Invalid("Encode: packet body holds no value");
  }
  const PacketType body_type = kBodyTypes[packet.body.index()];
  if (common.type != body_type) [[unlikely]] {
    return Invalid("Encode: common.type ", PacketTypeName(common.type), " does not match the ",
                   PacketTypeName(body_type), " body");
  }
  WHARF_ASSIGN_OR_RETURN(const size_t size, CheckedEncodedSize(packet));
  if (out.size() < size) [[unlikely]] {
    return Invalid(PacketTypeName(common.type), ": output buffer of ", out.size(),
                   " bytes is smaller than the ", size, "-byte packet");
  }
  std::byte* p = out.data();
  if (const auto* d = std::get_if<Data>(&packet.body)) {
    WriteDataHeader(common, d->header, p);
    // memmove: the caller may have built the payload in place, right after
    // the header in `out`.
    if (!d->payload.empty()) {
      std::memmove(p + kDataHeaderBytes, d->payload.data(), d->payload.size());
    }
    return size;
  }
  WriteCommon(common, p);
  if (const auto* g = std::get_if<Grant>(&packet.body)) {
    StoreU32(p + kOffGrantOffset, g->offset);
    StoreU8(p + kOffGrantPriority, g->priority);
    StoreU8(p + kOffGrantFlags, g->flags);
    std::memset(p + kOffGrantPad, 0, kGrantBytes - kOffGrantPad);
  } else if (const auto* r = std::get_if<Resend>(&packet.body)) {
    StoreU32(p + kOffResendOffset, r->offset);
    StoreU32(p + kOffResendLength, r->length);
    StoreU8(p + kOffResendPriority, r->priority);
    std::memset(p + kOffResendPad, 0, kResendBytes - kOffResendPad);
  } else if (const auto* c = std::get_if<Cutoffs>(&packet.body)) {
    for (size_t i = 0; i < c->unsched_cutoffs.size(); ++i) {
      StoreU32(p + kOffCutoffs + 4 * i, c->unsched_cutoffs[i]);
    }
    StoreU16(p + kOffCutoffsVersion, c->version);
    std::memset(p + kOffCutoffsPad, 0, kCutoffsBytes - kOffCutoffsPad);
  } else if (const auto* a = std::get_if<AckList>(&packet.body)) {
    StoreU16(p + kOffAckCount, a->count);
    std::memset(p + kOffAckPad, 0, kOffAckEntries - kOffAckPad);
    for (size_t i = 0; i < a->count; ++i) {
      std::byte* e = p + kOffAckEntries + i * kAckEntryBytes;
      StoreU64(e + kOffEntryClientId, a->acks[i].client_id);
      StoreU16(e + kOffEntryServerPort, a->acks[i].server_port);
      std::memset(e + kOffEntryPad, 0, kAckEntryBytes - kOffEntryPad);
    }
  }
  // RPC_UNKNOWN, BUSY and NEED_ACK are the common header alone.
  return size;
}

Status EncodeDataHeader(const CommonHeader& common, const DataHeader& data,
                        std::span<std::byte> out) {
  if (out.size() < kDataHeaderBytes) [[unlikely]] {
    return Invalid("DATA: output buffer of ", out.size(), " bytes is smaller than the ",
                   kDataHeaderBytes, "-byte header");
  }
  if (common.type != PacketType::kData) [[unlikely]] {
    return Invalid("EncodeDataHeader: common.type is ", PacketTypeName(common.type), ", not DATA");
  }
  WHARF_RETURN_IF_ERROR(CheckFlags(PacketType::kData, common.flags));
  WHARF_RETURN_IF_ERROR(CheckDataHeaderOnly(data));
  WriteDataHeader(common, data, out.data());
  return OkStatus();
}

}  // namespace wharf::wire
