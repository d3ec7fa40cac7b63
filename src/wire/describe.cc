// wire/describe.cc: Describe and DescribeVerbose, the human-readable renderings
// of a datagram. Describe's one-liners are what scenario tests compare in
// FakeNetwork packet logs, so their format is part of the test contract:
// change it only together with every expected log.
#include <charconv>
#include <string>
#include <type_traits>
#include <variant>

#include "wire/packet.h"

namespace wharf::wire {
namespace {

void AppendUint(std::string& out, uint64_t v) {
  char buf[20];  // enough for UINT64_MAX in decimal
  auto [end, ec] = std::to_chars(buf, buf + sizeof(buf), v);
  (void)ec;  // cannot fail: the buffer fits every uint64_t
  out.append(buf, end);
}

void AppendHex8(std::string& out, uint8_t v) {
  static constexpr char kDigits[] = "0123456789abcdef";
  out += "0x";
  out += kDigits[v >> 4];
  out += kDigits[v & 0xf];
}

// " key=value" for an unsigned field.
void AppendField(std::string& out, std::string_view key, uint64_t v) {
  out += ' ';
  out += key;
  out += '=';
  AppendUint(out, v);
}

void AppendFlagsField(std::string& out, std::string_view key, uint8_t flags,
                      std::string_view bit0_name) {
  out += ' ';
  out += key;
  out += '=';
  AppendHex8(out, flags);
  if ((flags & 0x01) != 0) {
    out += '(';
    out += bit0_name;
    out += ')';
  }
}

}  // namespace

std::string Describe(std::span<const std::byte> bytes) {
  Result<Packet> packet = Decode(bytes);
  if (!packet.ok()) return "MALFORMED";
  const CommonHeader& common = packet->common;
  std::string out(PacketTypeName(common.type));
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, Data>) {
          out += ' ';
          AppendUint(out, body.payload.size());
          out += '@';
          AppendUint(out, body.header.offset);
          if ((common.flags & kFlagRetransmit) != 0) out += " retx";
        } else if constexpr (std::is_same_v<T, Grant>) {
          out += ' ';
          AppendUint(out, body.offset);
        } else if constexpr (std::is_same_v<T, Resend>) {
          out += ' ';
          AppendUint(out, body.length);
          out += '@';
          AppendUint(out, body.offset);
        } else if constexpr (std::is_same_v<T, Cutoffs>) {
          out += " v";
          AppendUint(out, body.version);
        } else if constexpr (std::is_same_v<T, AckList>) {
          out += ' ';
          AppendUint(out, body.count);
        }
        // RPC_UNKNOWN, BUSY, NEED_ACK: the name says it all.
      },
      packet->body);
  return out;
}

std::string DescribeVerbose(std::span<const std::byte> bytes) {
  Result<Packet> packet = Decode(bytes);
  if (!packet.ok()) return "MALFORMED: " + packet.status().message();
  const CommonHeader& common = packet->common;
  std::string out(PacketTypeName(common.type));
  AppendField(out, "id", common.rpc_id);
  out += ' ';
  AppendUint(out, common.sport);
  out += "->";
  AppendUint(out, common.dport);
  std::visit(
      [&](const auto& body) {
        using T = std::decay_t<decltype(body)>;
        if constexpr (std::is_same_v<T, Data>) {
          const DataHeader& h = body.header;
          AppendField(out, "len", h.message_length);
          AppendField(out, "off", h.offset);
          AppendField(out, "payload", body.payload.size());
          AppendField(out, "incoming", h.incoming);
          AppendField(out, "cutoff_v", h.cutoff_version);
          out += " ack=";
          AppendUint(out, h.ack.client_id);
          out += '@';
          AppendUint(out, h.ack.server_port);
          AppendField(out, "ack_floor", h.ack_floor);
        } else if constexpr (std::is_same_v<T, Grant>) {
          AppendField(out, "off", body.offset);
          AppendField(out, "prio", body.priority);
          AppendFlagsField(out, "grant_flags", body.flags, "resend_all");
        } else if constexpr (std::is_same_v<T, Resend>) {
          AppendField(out, "off", body.offset);
          AppendField(out, "len", body.length);
          AppendField(out, "prio", body.priority);
        } else if constexpr (std::is_same_v<T, Cutoffs>) {
          AppendField(out, "v", body.version);
          out += " cutoffs=[";
          for (size_t i = 0; i < body.unsched_cutoffs.size(); ++i) {
            if (i != 0) out += ',';
            AppendUint(out, body.unsched_cutoffs[i]);
          }
          out += ']';
        } else if constexpr (std::is_same_v<T, AckList>) {
          AppendField(out, "count", body.count);
          out += " acks=[";
          for (size_t i = 0; i < body.count; ++i) {
            if (i != 0) out += ',';
            AppendUint(out, body.acks[i].client_id);
            out += '@';
            AppendUint(out, body.acks[i].server_port);
          }
          out += ']';
        }
      },
      packet->body);
  // Last, so the line starts like the packet.h example ("DATA id=4 4000->5000 len=...").
  AppendFlagsField(out, "flags", common.flags, "retx");
  return out;
}

}  // namespace wharf::wire
