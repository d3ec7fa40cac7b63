// bench/counting_new.h: g_allocations, the C++ heap allocations made so far
// by a benchmark that links counting_new.cc (its operator new counts them),
// for per-operation allocation counters.
#pragma once

#include <atomic>
#include <cstdint>

extern std::atomic<uint64_t> g_allocations;
