// bench/buffer_bench.cc: what a Buffer costs on the paths every RPC takes:
// moving it (queues, RPC objects, completions), destroying it, and the whole
// life of a small heap payload; plus wrapping, moving and releasing memory a
// BufferOwner lends (the daemon's per-message path for application heaps).
//
// Before/after: the BM_Heap* benchmarks use only Allocate and moves, so they
// build against the Buffer before owners existed too (drop SlotOwner and
// BM_WrapMoveRelease).
#include <benchmark/benchmark.h>

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

#include "wharf/buffer.h"

namespace wharf {
namespace {

// Two moves per iteration (there and back), so the Buffer ends where it
// started; each move-assign also runs the destructor's test on an empty one.
void BM_HeapMoveAssign(benchmark::State& state) {
  Buffer a = Buffer::Allocate(64);
  Buffer b;
  for (auto _ : state) {
    b = std::move(a);
    benchmark::DoNotOptimize(b);
    a = std::move(b);
    benchmark::DoNotOptimize(a);
  }
  state.SetItemsProcessed(2 * state.iterations());
}
BENCHMARK(BM_HeapMoveAssign);

// Move-construct into a temporary and back: a move plus the destruction of the
// moved-from temporary, the common shape when a Buffer is passed by value.
void BM_HeapMoveConstructAndDestroy(benchmark::State& state) {
  Buffer a = Buffer::Allocate(64);
  for (auto _ : state) {
    Buffer t(std::move(a));
    benchmark::DoNotOptimize(t);
    a = std::move(t);
  }
  benchmark::DoNotOptimize(a);
}
BENCHMARK(BM_HeapMoveConstructAndDestroy);

// A small payload's whole life: allocate, move twice, free.
void BM_HeapAllocateMoveDestroy(benchmark::State& state) {
  for (auto _ : state) {
    Buffer a = Buffer::Allocate(64);
    Buffer b(std::move(a));
    Buffer c;
    c = std::move(b);
    benchmark::DoNotOptimize(c);
  }
}
BENCHMARK(BM_HeapAllocateMoveDestroy);

// One shared owner lending fixed slices, as an application's heap would.
class SlotOwner : public BufferOwner {
 public:
  void Release(std::span<std::byte> whole) noexcept override { released_bytes_ += whole.size(); }
  size_t released_bytes() const { return released_bytes_; }

 private:
  size_t released_bytes_ = 0;
};

// Wrap (one shared_ptr copy: an atomic increment), two moves, release (one
// virtual call and an atomic decrement).
void BM_WrapMoveRelease(benchmark::State& state) {
  std::vector<std::byte> slot(256);
  auto owner = std::make_shared<SlotOwner>();
  for (auto _ : state) {
    Buffer a = Buffer::Wrap(slot, owner, 64);
    Buffer b(std::move(a));
    Buffer c;
    c = std::move(b);
    benchmark::DoNotOptimize(c);
  }
  benchmark::DoNotOptimize(owner->released_bytes());
}
BENCHMARK(BM_WrapMoveRelease);

}  // namespace
}  // namespace wharf
