// MethodIdTable: CRC-32 ids, collisions and the reserved range refused.
#include "protoc/method_ids.h"

#include <zlib.h>

#include <cstdio>

#include "wharf/endpoint.h"

namespace wharf::protoc {

uint32_t MethodIdOf(std::string_view path) {
  const uLong crc = crc32(0L, Z_NULL, 0);
  return static_cast<uint32_t>(
      crc32(crc, reinterpret_cast<const Bytef*>(path.data()), static_cast<uInt>(path.size())));
}

Result<uint32_t> MethodIdTable::Add(std::string_view path) {
  const uint32_t id = MethodIdOf(path);
  char hex[16];
  std::snprintf(hex, sizeof(hex), "0x%08x", id);
  if (id >= kFirstReservedMethod) {
    return InvalidArgumentError(std::string(path) + " hashes to method id " + hex +
                                ", which wharf reserves for itself (0xffff0000 and up): "
                                "rename the method");
  }
  auto [it, added] = paths_.emplace(id, std::string(path));
  if (!added) {
    return InvalidArgumentError(std::string(path) + " and " + it->second + " share method id " +
                                hex + ": rename one of them");
  }
  return id;
}

}  // namespace wharf::protoc
