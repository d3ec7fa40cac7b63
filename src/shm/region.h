// shm/region.h: Region, one application's shared-memory region mapped into
// this process: a sealed memfd laid out as in layout.h.
//
// One side creates it (Create) and passes the fd over the Unix socket; the
// other maps the fd it received (Attach). Either side may be the creator:
// Attach insists on the size seals, so a peer that created the memfd cannot
// shrink it under us afterwards (which would turn our next access into
// SIGBUS), and checks the header against the geometry the caller expects.
//
// The mapping is MADV_DONTFORK: a child of this process does not inherit it
// (so a forked application cannot become a second producer on its rings by
// accident); a child that needs the region Attaches the fd itself.
//
// After setup a Region uses only its private Layout: accessors resolve
// offsets against it and bounds-check them; nothing read from the region is
// used to compute an address. Not thread-safe to create or destroy; the
// accessors are const and may be used from any thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string_view>

#include "shm/layout.h"
#include "shm/spsc_ring.h"
#include "wharf/result.h"

namespace wharf::shm {

class Region {
 public:
  // Creates a memfd named "wharf-shm:<name>" sized for `geometry`, seals its
  // size (and the seal set), maps it and writes the header. Rings start
  // empty; the heap is zero.
  static Result<std::unique_ptr<Region>> Create(const Geometry& geometry, std::string_view name);

  // Maps the memfd `fd` (as received from the peer; the caller keeps
  // ownership of `fd`, the Region works on its own duplicate). Fails unless
  // the fd is a memfd sealed against shrinking and growing, its size is the
  // one `expected` gives, and its header matches `expected` field by field
  // (validator.h ValidateHeader).
  static Result<std::unique_ptr<Region>> Attach(int fd, const Geometry& expected);

  // Reads the geometry recorded in the header of memfd `fd` without mapping
  // it, for an attaching side that is not told the geometry out of band. The
  // result is untrusted input: pass it to Attach, which checks it again.
  static Result<Geometry> ReadGeometry(int fd);

  ~Region();
  Region(const Region&) = delete;
  Region& operator=(const Region&) = delete;

  // The memfd (owned by the Region; closed by its destructor). Send it to
  // the peer with SCM_RIGHTS.
  int fd() const { return fd_; }
  const Layout& layout() const { return layout_; }

  // A private copy of the header as it is now, for validation.
  RegionHeader ReadHeader() const;

  // The rings, resolved against the private Layout.
  RingMemory command_ring() const { return RingAt(layout_.command); }
  RingMemory completion_ring() const { return RingAt(layout_.completion); }

  // The whole heap.
  std::span<std::byte> heap() const { return {base_ + layout_.heap_offset, layout_.heap_bytes}; }
  // heap[offset, offset + length) if it lies inside the heap (overflow-safe);
  // kOutOfRange naming the range otherwise.
  Result<std::span<std::byte>> HeapRange(uint64_t offset, uint64_t length) const;

  // Every byte of the mapping. For tests, tools and the fuzzer; production
  // code goes through the accessors above.
  std::span<std::byte> bytes() const { return {base_, layout_.total_bytes}; }

 private:
  Region(int fd, std::byte* base, const Layout& layout) : fd_(fd), base_(base), layout_(layout) {}

  // Maps `fd` (which the Region then owns) for `layout`.
  static Result<std::unique_ptr<Region>> Map(int fd, const Layout& layout);
  RingMemory RingAt(const RingRecord& record) const;

  const int fd_;
  std::byte* const base_;  // mapping of layout_.total_bytes
  const Layout layout_;    // private; never re-read from the region
};

}  // namespace wharf::shm
