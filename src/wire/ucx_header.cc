// The ucx:// active-message header: encode and checked decode.
#include "wire/ucx_header.h"

#include <cstring>
#include <string>

#include "wire/byte_order.h"

namespace wharf::wire {

UcxHeaderBytes EncodeUcxHeader(const UcxHeader& header) {
  UcxHeaderBytes out{};
  auto* p = reinterpret_cast<std::byte*>(out.data());
  StoreU8(p, kUcxHeaderVersion);
  StoreU8(p + 1, static_cast<uint8_t>(header.kind));
  StoreU16(p + 2, header.code);
  StoreU16(p + 4, header.reply_port);
  StoreU16(p + 6, 0);
  StoreU64(p + 8, header.rpc_id);
  return out;
}

Result<UcxHeader> DecodeUcxHeader(std::string_view bytes) {
  if (bytes.size() != kUcxHeaderBytes) {
    return InvalidArgumentError("ucx header: expected " + std::to_string(kUcxHeaderBytes) +
                                " bytes, got " + std::to_string(bytes.size()));
  }
  const auto* p = reinterpret_cast<const std::byte*>(bytes.data());
  if (LoadU8(p) != kUcxHeaderVersion) {
    return InvalidArgumentError("ucx header: version " + std::to_string(LoadU8(p)) +
                                ", expected " + std::to_string(kUcxHeaderVersion));
  }
  UcxHeader h;
  const uint8_t kind = LoadU8(p + 1);
  if (kind < static_cast<uint8_t>(UcxKind::kRequest) || kind > static_cast<uint8_t>(UcxKind::kImmediate)) {
    return InvalidArgumentError("ucx header: unknown kind " + std::to_string(kind));
  }
  h.kind = static_cast<UcxKind>(kind);
  h.code = LoadU16(p + 2);
  h.reply_port = LoadU16(p + 4);
  h.rpc_id = LoadU64(p + 8);
  if (LoadU16(p + 6) != 0) return InvalidArgumentError("ucx header: reserved bytes not zero");
  if (h.rpc_id == 0) return InvalidArgumentError("ucx header: rpc id 0");
  if (h.kind != UcxKind::kRefused && h.code != 0) {
    return InvalidArgumentError("ucx header: a code on a kind that carries none");
  }
  if (h.kind == UcxKind::kRefused && h.code == 0) {
    return InvalidArgumentError("ucx header: a refusal without a code");
  }
  if (h.kind != UcxKind::kRequest && h.kind != UcxKind::kCancel && h.reply_port != 0) {
    return InvalidArgumentError("ucx header: a reply port on a kind that carries none");
  }
  return h;
}

}  // namespace wharf::wire
