// GsoStaging: see udp_gso_staging.h.
#include "transport/udp/udp_gso_staging.h"

#include <algorithm>
#include <cstring>

namespace wharf::transport::udp {

GsoStaging::GsoStaging(size_t min_bytes, size_t capacity)
    : min_bytes_(min_bytes), buffer_(min_bytes == 0 ? 0 : std::max(capacity, kMinCapacity)) {}

GsoStaging::Outcome GsoStaging::Stage(iovec* iovs, size_t* count) {
  if (min_bytes_ == 0 || *count < 2) return Outcome::kKept;
  size_t total = 0;
  for (size_t i = 0; i < *count; ++i) total += iovs[i].iov_len;
  if (total < min_bytes_) return Outcome::kKept;
  if (total > buffer_.size() - used_) return Outcome::kFull;
  std::byte* start = buffer_.data() + used_;
  std::byte* out = start;
  for (size_t i = 0; i < *count; ++i) {
    std::memcpy(out, iovs[i].iov_base, iovs[i].iov_len);
    out += iovs[i].iov_len;
  }
  used_ += total;
  iovs[0].iov_base = start;
  iovs[0].iov_len = total;
  *count = 1;
  return Outcome::kCopied;
}

}  // namespace wharf::transport::udp
