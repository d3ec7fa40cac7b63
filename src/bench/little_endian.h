// bench/little_endian.h: the little-endian integers of the kernel
// baselines' wire headers (kernel-udp's datagram header, kernel-tcp's
// frame), written and read byte by byte so that neither alignment nor the
// host's byte order matters.
#pragma once

#include <cstdint>

namespace wharf::bench {

// Writes the low `bytes` bytes of `v` to `out`, least significant first.
inline void PutLe(uint64_t v, int bytes, char* out) {
  for (int i = 0; i < bytes; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

// Reads `bytes` bytes written by PutLe.
inline uint64_t GetLe(const char* in, int bytes) {
  uint64_t v = 0;
  for (int i = 0; i < bytes; ++i) {
    v |= static_cast<uint64_t>(static_cast<uint8_t>(in[i])) << (8 * i);
  }
  return v;
}

}  // namespace wharf::bench
