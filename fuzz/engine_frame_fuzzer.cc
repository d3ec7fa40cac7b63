// fuzz/engine_frame_fuzzer.cc: engine::UnwrapFrame on arbitrary messages; a
// frame that parses must re-wrap to the same header bytes.
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "engine/frame.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  Buffer message = Buffer::Copy({reinterpret_cast<const std::byte*>(data), size});
  auto frame = engine::UnwrapFrame(message);
  if (!frame.ok()) return 0;
  if (message.size() != size - engine::kFrameBytes) __builtin_trap();
  Buffer again = engine::WrapFrame(*frame, std::move(message));
  if (again.size() != size) __builtin_trap();
  // Reserved bytes are zeroed on wrap; every field byte must match.
  static constexpr size_t kFieldBytes[] = {0, 1, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15,
                                           16, 17, 18, 19, 20, 21, 22, 23, 24, 25, 26, 27};
  for (size_t i : kFieldBytes) {
    if (static_cast<uint8_t>(again.data()[i]) != data[i]) __builtin_trap();
  }
  return 0;
}
