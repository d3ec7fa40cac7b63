// Grouping of consecutive datagrams into UDP GSO sends.
#include "transport/udp/udp_gso_plan.h"

namespace wharf::transport::udp {

size_t NextGsoRun(std::span<const OutDatagram> rest, bool gso, const GsoLimits& limits) {
  if (rest.empty()) return 0;
  const OutDatagram& first = rest.front();
  const size_t segment = first.size();
  // An empty first datagram has no segment size to split by; a stamped one
  // goes alone, so that its stamp is its own.
  if (!gso || segment == 0 || first.departure_token != 0) return 1;
  size_t run = 1;
  size_t payload = segment;
  while (run < rest.size() && run < limits.max_segments) {
    const OutDatagram& next = rest[run];
    const size_t size = next.size();
    if (next.to != first.to || next.priority != first.priority) break;
    if (next.departure_token != 0) break;
    if (size == 0 || size > segment) break;
    if (payload + size > limits.max_payload_bytes) break;
    payload += size;
    ++run;
    // A shorter datagram can only be the tail: the kernel cuts every
    // `segment` bytes, so anything after it would be misaligned.
    if (size < segment) break;
  }
  return run;
}

size_t AppendPart(iovec* iovs, size_t count, std::span<const std::byte> part) {
  if (part.empty()) return count;
  if (count > 0) {
    iovec& last = iovs[count - 1];
    if (static_cast<const std::byte*>(last.iov_base) + last.iov_len == part.data()) {
      last.iov_len += part.size();
      return count;
    }
  }
  // The kernel only reads through iov_base; the cast is its C signature.
  iovs[count].iov_base = const_cast<std::byte*>(part.data());
  iovs[count].iov_len = part.size();
  return count + 1;
}

}  // namespace wharf::transport::udp
