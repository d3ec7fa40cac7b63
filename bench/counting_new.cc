// bench/counting_new.cc: the global operator new of the benchmarks that
// report heap allocations per operation (counting_new.h). Linked into those
// executables only; it replaces the allocator for the whole program.
#include "counting_new.h"

#include <cstdlib>
#include <new>

// The replacement pair is malloc-based on both sides; GCC cannot see that.
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"

std::atomic<uint64_t> g_allocations{0};

void* operator new(size_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  if (void* p = std::malloc(n == 0 ? 1 : n)) return p;
  throw std::bad_alloc();
}
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, size_t) noexcept { std::free(p); }
