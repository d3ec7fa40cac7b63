// Micro-benchmarks of the shared-memory SPSC ring (src/shm/spsc_ring.h):
//   BM_PushPop/<batch>          one thread pushes a batch and pops it back:
//                               the cost of the ring operations alone.
//   BM_PushPopValidated/<batch> the same through the daemon's validating
//                               consumer (index + descriptor checks).
//   BM_PingPong/<batch>         two threads, a pair of rings: the main thread
//                               pushes a batch on ring A, an echo thread pops
//                               it and pushes it back on ring B, the main
//                               thread pops it. Round trips/s and items/s.
// Reproduce: build-shm/bench/shm_ring_bench --benchmark_min_time=1
#include <benchmark/benchmark.h>
#include <sched.h>

#include <array>
#include <atomic>
#include <cstdlib>
#include <memory>
#include <span>
#include <thread>
#include <utility>

#include "shm/region.h"
#include "shm/spsc_ring.h"
#include "shm/validator.h"

namespace wharf::shm {
namespace {

constexpr Geometry kGeometry{
    .command_entries = 256, .completion_entries = 256, .heap_bytes = 1 << 20};
constexpr size_t kMaxBatch = 64;

std::unique_ptr<Region> MakeRegion() {
  Result<std::unique_ptr<Region>> region = Region::Create(kGeometry, "bench");
  if (!region.ok()) std::abort();  // setup failure of the benchmark itself
  return std::move(region).value();
}

std::array<Descriptor, kMaxBatch> MakeBatch() {
  std::array<Descriptor, kMaxBatch> batch{};
  for (size_t i = 0; i < batch.size(); ++i) {
    batch[i].opcode = static_cast<uint16_t>(Opcode::kNop);
    batch[i].cookie = i;
    batch[i].heap_offset = 64 * i;
    batch[i].length = 64;
  }
  return batch;
}

// Spins a little, then yields, so that two spinning threads sharing a core
// (as on a loaded CI box) still make progress.
class Backoff {
 public:
  void Pause() {
    if (++spins_ < 128) {
#if defined(__x86_64__) || defined(__i386__)
      __builtin_ia32_pause();
#endif
    } else {
      spins_ = 0;
      sched_yield();
    }
  }
  void Reset() { spins_ = 0; }

 private:
  int spins_ = 0;
};

void BM_PushPop(benchmark::State& state) {
  const size_t batch_size = static_cast<size_t>(state.range(0));
  auto region = MakeRegion();
  SpscProducer producer(region->command_ring());
  SpscConsumer consumer(region->command_ring());
  const auto in = MakeBatch();
  std::array<Descriptor, kMaxBatch> out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(producer.TryPush(std::span(in).first(batch_size)));
    benchmark::DoNotOptimize(consumer.TryPop(std::span(out).first(batch_size)));
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch_size));
}
BENCHMARK(BM_PushPop)->Arg(1)->Arg(16);

void BM_PushPopValidated(benchmark::State& state) {
  const size_t batch_size = static_cast<size_t>(state.range(0));
  auto region = MakeRegion();
  SpscProducer producer(region->command_ring());
  ValidatingConsumer consumer(region->command_ring(), "command ring",
                              DescriptorRules{.heap_bytes = kGeometry.heap_bytes,
                                              .max_message_bytes = 1 << 20,
                                              .opcodes = {Opcode::kNop},
                                              .known_flags = 0});
  const auto in = MakeBatch();
  std::array<Descriptor, kMaxBatch> out;
  for (auto _ : state) {
    benchmark::DoNotOptimize(producer.TryPush(std::span(in).first(batch_size)));
    Result<size_t> n = consumer.TryPop(std::span(out).first(batch_size));
    if (!n.ok()) {
      state.SkipWithError(n.status().ToString().c_str());
      break;
    }
    benchmark::ClobberMemory();
  }
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch_size));
}
BENCHMARK(BM_PushPopValidated)->Arg(1)->Arg(16);

// Pushes all of `entries`, spinning while the ring is full.
void PushAll(SpscProducer& producer, std::span<const Descriptor> entries, Backoff& backoff) {
  while (!entries.empty()) {
    const size_t n = producer.TryPush(entries);
    if (n == 0) backoff.Pause();
    entries = entries.subspan(n);
  }
}

void BM_PingPong(benchmark::State& state) {
  const size_t batch_size = static_cast<size_t>(state.range(0));
  auto region = MakeRegion();
  std::atomic<bool> stop{false};
  // Echo side: command ring -> completion ring.
  std::thread echo([&] {
    SpscConsumer in(region->command_ring());
    SpscProducer out(region->completion_ring());
    std::array<Descriptor, kMaxBatch> buf;
    Backoff backoff;
    while (!stop.load(std::memory_order_relaxed)) {
      const size_t n = in.TryPop(buf);
      if (n == 0) {
        backoff.Pause();
        continue;
      }
      backoff.Reset();
      PushAll(out, std::span(buf).first(n), backoff);
    }
  });
  SpscProducer ping(region->command_ring());
  SpscConsumer pong(region->completion_ring());
  const auto batch = MakeBatch();
  std::array<Descriptor, kMaxBatch> back;
  Backoff backoff;
  for (auto _ : state) {
    PushAll(ping, std::span(batch).first(batch_size), backoff);
    for (size_t got = 0; got < batch_size;) {
      const size_t n = pong.TryPop(std::span(back).first(batch_size - got));
      if (n == 0) backoff.Pause();
      got += n;
    }
  }
  stop.store(true);
  echo.join();
  state.SetItemsProcessed(static_cast<int64_t>(state.iterations() * batch_size));
  state.counters["round_trips"] =
      benchmark::Counter(static_cast<double>(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_PingPong)->Arg(1)->Arg(16)->UseRealTime();

}  // namespace
}  // namespace wharf::shm
