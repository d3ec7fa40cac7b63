// protoc/method_ids.h: MethodIdTable, the ids protoc-gen-wharf gives the
// methods of one .proto file. A method's id is the CRC-32 (zlib's, the
// IEEE polynomial) of its full path, "/package.Service/Method", as mRPC
// derives its ids: stable across builds and languages, and computable by
// anyone who knows the path. Two paths of one file with the same id, or an
// id in wharf's reserved range (kFirstReservedMethod and up), are refused
// at generation time with both names, rather than found at run time as one
// method answering another's calls. Pure: no protobuf types, so it is
// tested directly.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>

#include "wharf/result.h"

namespace wharf::protoc {

// The CRC-32 of a method path.
uint32_t MethodIdOf(std::string_view path);

class MethodIdTable {
 public:
  // The id of `path`, or kInvalidArgument naming the path it collides with
  // (or the reserved range). Adding a path twice is a collision too.
  Result<uint32_t> Add(std::string_view path);

  size_t size() const { return paths_.size(); }

 private:
  std::map<uint32_t, std::string> paths_;  // id -> path
};

}  // namespace wharf::protoc
