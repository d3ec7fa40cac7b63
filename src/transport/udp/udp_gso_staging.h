// transport/udp/udp_gso_staging.h: copies the scattered parts of a large GSO
// send into one contiguous buffer before the kernel sees them.
//
// Why: a GSO send of bulk data is ~44 datagrams, each a short header and a
// ~1.4 KiB payload from the application's buffer, so ~88 iovecs. The kernel
// copies every iovec with its own user-copy call. Over a veth pair with MTU
// 1500 that copy took 21% of the sender's CPU at 54 Gbit/s and, in the
// VM's spells of slow CPU-to-CPU transfers, half of it at 25 Gbit/s. One
// memcpy here into a buffer that stays in cache, then one iovec per send,
// costs less than the kernel's per-iovec copies in either state: 54 -> 57
// Gbit/s and 25 -> 43 Gbit/s (docs/transports.md, "Sending: batching and
// GSO").
#pragma once

#include <sys/uio.h>

#include <cstddef>
#include <vector>

namespace wharf::transport::udp {

class GsoStaging {
 public:
  // What Stage did with a message's iovecs.
  enum class Outcome {
    kKept,    // left as they are: one iovec already, or under min_bytes
    kCopied,  // replaced by one iovec into the staging buffer
    kFull,    // would need more room than is left before Reset
  };

  // Messages of at least `min_bytes` in more than one iovec get copied; 0
  // turns copying off. `capacity` is the room per batch, at least one
  // maximal UDP datagram (64 KiB) so that a batch's first message always
  // fits; small enough to stay in the CPU's cache between the copy here and
  // the kernel's.
  explicit GsoStaging(size_t min_bytes = 0, size_t capacity = kDefaultCapacity);

  static constexpr size_t kDefaultCapacity = 256 << 10;
  static constexpr size_t kMinCapacity = 64 << 10;

  // Makes all room free again; call before planning a batch (whatever was
  // staged before must have been handed to the kernel).
  void Reset() { used_ = 0; }

  // Considers the message iovs[0, *count). On kCopied iovs[0] points at the
  // copy (valid until the next Reset) and *count is 1; otherwise nothing
  // changes. kFull asks the caller to send what it has planned and Reset.
  Outcome Stage(iovec* iovs, size_t* count);

 private:
  size_t min_bytes_;
  size_t used_ = 0;
  std::vector<std::byte> buffer_;
};

}  // namespace wharf::transport::udp
