// daemon/testing/region_parts.h: RegionParts, one application's region with
// the session parts that live on it (ReceiveArea, SendLoans,
// CompletionOutbox) and the application's end of its completion ring, for
// the parts' unit tests: no session, no socket, no thread.
// Single-threaded; owns everything it makes.
#pragma once

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "daemon/completion_outbox.h"
#include "daemon/receive_area.h"
#include "daemon/send_loans.h"
#include "shm/region.h"
#include "shm/spsc_ring.h"

namespace wharf::daemon::testing {

class RegionParts {
 public:
  // A region of `heap_bytes` (the first half the send area, the rest the
  // receive area) and a completion ring of `completion_entries`.
  explicit RegionParts(uint64_t heap_bytes = 65536, uint32_t completion_entries = 8)
      : region(shm::Region::Create({.command_entries = 8,
                                    .completion_entries = completion_entries,
                                    .heap_bytes = heap_bytes},
                                   "daemon-parts-test")
                   .value()),
        area(ReceiveArea::Create(region, heap_bytes / 2, heap_bytes / 2).value()),
        loans(std::make_unique<SendLoans>(region)),
        outbox(std::make_unique<CompletionOutbox>(region->completion_ring(), *loans, *area)),
        app_completions(region->completion_ring()) {}

  // The entries the application finds in its completion ring now.
  std::vector<shm::Descriptor> Read() {
    std::vector<shm::Descriptor> out(app_completions.capacity());
    out.resize(app_completions.TryPop(out));
    return out;
  }
  // The bytes an entry points at, as text.
  std::string Text(const shm::Descriptor& e) const {
    std::span<std::byte> bytes = *region->HeapRange(e.heap_offset, e.length);
    return std::string(reinterpret_cast<const char*>(bytes.data()), bytes.size());
  }
  // Writes `text` into the heap at `offset` (the application filling its
  // send area).
  void Write(uint64_t offset, std::string_view text) {
    std::span<std::byte> bytes = *region->HeapRange(offset, text.size());
    std::memcpy(bytes.data(), text.data(), text.size());
  }
  uint64_t OffsetOf(const Buffer& b) const {
    return static_cast<uint64_t>(b.data() - region->heap().data());
  }

  std::shared_ptr<shm::Region> region;
  std::unique_ptr<ReceiveArea> area;
  std::unique_ptr<SendLoans> loans;
  std::unique_ptr<CompletionOutbox> outbox;
  shm::SpscConsumer app_completions;
};

}  // namespace wharf::daemon::testing
