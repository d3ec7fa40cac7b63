// wire/packet.h: the packets of wharf's Homa-style protocol over UDP, and
// their encode/decode. Pure functions over byte spans: no sockets, no state.
// docs/protocol.md describes what each packet means; this file fixes bytes.
//
// Every field is big-endian. Each UDP datagram carries exactly one packet.
// Reserved bytes are written as zero and ignored on decode.
//
// Common header (16 bytes), first in every packet:
//
//    0               1               2               3
//   +---------------+---------------+---------------+---------------+
//   |    version    |     type      |     flags     |   reserved    |
//   +---------------+---------------+---------------+---------------+
//   |        sport (endpoint)       |        dport (endpoint)       |
//   +---------------+---------------+---------------+---------------+
//   |                       rpc_id (64 bits): the sender's id;      |
//   |        even on the client, client id ^ 1 on the server        |
//   +---------------+---------------+---------------+---------------+
//
// DATA (48-byte header, then payload up to the datagram size):
//   16 message_length u32   total bytes in the message
//   20 offset u32           where this packet's payload sits in the message
//   24 incoming u32         sender will send up to here without more grants
//   28 cutoff_version u16   version of the receiver's cutoffs the sender used
//   30 ack_server_port u16  piggybacked ack: the sender (as a client) is done
//   32 ack_client_id u64      with RPC ack_client_id at this endpoint id
//                             (0 = none)
//   40 ack_floor u64        every client RPC id of the sender to this dport
//                           below this is finished (0 = no claim); closes the
//                           late-duplicate gap of at-most-once (protocol.md)
// GRANT (24): 16 offset u32 (may send up to here), 20 priority u8,
//             21 flags u8 (bit 0: resend everything below offset), 22 pad
// RESEND (28): 16 offset u32, 20 length u32, 24 priority u8, 25 pad
// RPC_UNKNOWN, BUSY, NEED_ACK (16): the common header only
// CUTOFFS (52): 16 unsched_cutoffs[8] u32, 48 cutoff_version u16, 50 pad
// ACK (20 + 12 n): 16 count u16, 18 pad, then n x {client_id u64,
//             server_port u16, pad u16}, n <= kMaxAcksPerPacket
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <variant>

#include "wharf/result.h"

namespace wharf::wire {

// 2: sport/dport are endpoint ids within a host's socket, no longer UDP
// ports (docs/protocol.md, "Addressing").
inline constexpr uint8_t kProtocolVersion = 2;

// The endpoint id of a socket's default endpoint (the one `homa://host:port`
// names). Named endpoints (`homa://host:port/name`) take the id derived from
// their name (EndpointIdForName, wire/endpoint_id.h), never this one.
inline constexpr uint16_t kDefaultEndpoint = 0;

enum class PacketType : uint8_t {
  kData = 0x10,
  kGrant = 0x11,
  kResend = 0x12,
  kRpcUnknown = 0x13,
  kBusy = 0x14,
  kCutoffs = 0x15,
  kNeedAck = 0x17,
  kAck = 0x18,
};

// "DATA", "GRANT", ...; "UNKNOWN" for values outside the enum.
std::string_view PacketTypeName(PacketType type);

// Common-header flag bits.
inline constexpr uint8_t kFlagRetransmit = 0x01;  // DATA sent again after RESEND
inline constexpr uint8_t kKnownFlags = kFlagRetransmit;
// GRANT flag bits.
inline constexpr uint8_t kGrantResendAll = 0x01;

inline constexpr int kNumPriorities = 8;  // 0 lowest .. 7 highest
inline constexpr size_t kMaxAcksPerPacket = 8;

inline constexpr size_t kCommonHeaderBytes = 16;
inline constexpr size_t kDataHeaderBytes = 48;
inline constexpr size_t kGrantBytes = 24;
inline constexpr size_t kResendBytes = 28;
inline constexpr size_t kCutoffsBytes = 52;
inline constexpr size_t kAckHeaderBytes = 20;
inline constexpr size_t kAckEntryBytes = 12;
inline constexpr size_t kMaxAckBytes = kAckHeaderBytes + kMaxAcksPerPacket * kAckEntryBytes;
// Largest header of any packet type; a send buffer needs this plus payload.
inline constexpr size_t kMaxHeaderBytes = kMaxAckBytes;

struct CommonHeader {
  PacketType type = PacketType::kData;
  uint8_t flags = 0;
  // Endpoint ids within the sending and receiving hosts' sockets (not UDP
  // ports, which a NAT may rewrite).
  uint16_t sport = 0;
  uint16_t dport = 0;
  uint64_t rpc_id = 0;
};

// "This client finished RPC client_id with the server endpoint server_port."
struct Ack {
  uint64_t client_id = 0;
  uint16_t server_port = 0;
  friend bool operator==(const Ack&, const Ack&) = default;
};

struct DataHeader {
  uint32_t message_length = 0;
  uint32_t offset = 0;
  uint32_t incoming = 0;
  uint16_t cutoff_version = 0;
  Ack ack;  // client_id 0 = no ack piggybacked
  uint64_t ack_floor = 0;
};

struct Grant {
  uint32_t offset = 0;
  uint8_t priority = 0;
  uint8_t flags = 0;
};

struct Resend {
  uint32_t offset = 0;
  uint32_t length = 0;
  uint8_t priority = 0;
};

struct Cutoffs {
  // unsched_cutoffs[p]: largest message length sent unscheduled at priority p
  // (0 = priority unused for unscheduled data).
  std::array<uint32_t, kNumPriorities> unsched_cutoffs{};
  uint16_t version = 0;
};

struct AckList {
  uint16_t count = 0;
  std::array<Ack, kMaxAcksPerPacket> acks{};
};

struct RpcUnknown {};
struct Busy {};
struct NeedAck {};

// DATA as decoded: the header plus a view of the payload inside the packet.
struct Data {
  DataHeader header;
  std::span<const std::byte> payload;
};

using Body = std::variant<Data, Grant, Resend, RpcUnknown, Busy, Cutoffs, NeedAck, AckList>;

struct Packet {
  CommonHeader common;
  Body body;
};

// Decodes one datagram. Any malformed input (short, wrong version, unknown
// type or flags, out-of-range field, trailing bytes after a fixed-size packet,
// DATA payload past message_length, priority > 7, ack count > 8) is an
// InvalidArgument error saying which field and why. Data::payload points into
// `bytes`. Never reads outside `bytes`.
Result<Packet> Decode(std::span<const std::byte> bytes);

// Decodes only the common header (cheap demultiplexing before full decode).
Result<CommonHeader> DecodeCommonHeader(std::span<const std::byte> bytes);

// Encodes `packet` into `out`; returns the bytes written. For DATA the payload
// is copied after the 48-byte header. Fails with InvalidArgument when `out` is
// too small or a field is out of range (priority > 7, ack count > 8).
Result<size_t> Encode(const Packet& packet, std::span<std::byte> out);

// The hot path for DATA: writes only the 48-byte header to out[0..48); the
// caller has placed (or will place) the payload right after it.
// Precondition: out.size() >= kDataHeaderBytes (checked; returns error).
Status EncodeDataHeader(const CommonHeader& common, const DataHeader& data,
                        std::span<std::byte> out);

// One-line summary for packet logs in scenario tests, e.g. "DATA 1400@0",
// "DATA 1400@2800 retx", "GRANT 10000", "RESEND 1400@0", "BUSY", "ACK 2",
// "CUTOFFS v3"; "MALFORMED" when Decode fails.
std::string Describe(std::span<const std::byte> bytes);

// Every field, for debugging: "DATA id=4 4000->5000 len=9000 off=1400 ...".
std::string DescribeVerbose(std::span<const std::byte> bytes);

}  // namespace wharf::wire
