// MeasureCrossCpuCopy: see cross_cpu_probe.h.
#include "bench/cross_cpu_probe.h"

#include <atomic>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "bench/affinity.h"

namespace wharf::bench {
namespace {

constexpr size_t kBlockBytes = 64 << 10;
// 64 blocks: 4 MiB, larger than a core's L2 and small beside a shared L3,
// as the in-flight bytes of a bulk row are.
constexpr size_t kBlocks = 64;

// Producer and consumer indexes on their own cache lines.
struct alignas(64) Counter {
  std::atomic<uint64_t> value{0};
};

}  // namespace

Result<double> MeasureCrossCpuCopy(const CrossCpuProbeOptions& options) {
  if (options.from_cpu < 0 || options.to_cpu < 0 || options.from_cpu == options.to_cpu) {
    return InvalidArgumentError("cross-CPU probe: needs two distinct CPUs, got " +
                                std::to_string(options.from_cpu) + " and " +
                                std::to_string(options.to_cpu));
  }
  std::vector<std::byte> ring(kBlocks * kBlockBytes, std::byte{1});
  std::vector<std::byte> source(kBlockBytes, std::byte{2});
  std::vector<std::byte> sink(kBlockBytes);
  Counter written;
  Counter read;
  std::atomic<int> pinned{0};
  std::atomic<bool> failed{false};
  std::atomic<bool> stop{false};
  const Clock& clock = SystemClock::Get();

  // Each thread pins itself; a failure stops both before any timing.
  auto pin = [&](int cpu) {
    if (!PinCallingThread(cpu)) failed.store(true);
    pinned.fetch_add(1);
    while (pinned.load() < 2) std::this_thread::yield();
    return !failed.load();
  };
  TimeNs start = 0;
  TimeNs end = 0;
  std::thread consumer([&] {
    if (!pin(options.to_cpu)) return;
    for (uint64_t i = 0;; ++i) {
      while (written.value.load(std::memory_order_acquire) <= i) {
        if (stop.load(std::memory_order_acquire) &&
            written.value.load(std::memory_order_acquire) <= i) {
          return;
        }
      }
      std::memcpy(sink.data(), &ring[(i % kBlocks) * kBlockBytes], kBlockBytes);
      read.value.store(i + 1, std::memory_order_release);
    }
  });
  // The producer has a thread of its own too: the caller's CPU mask stays
  // as it was (children it forks later inherit it).
  std::thread producer([&] {
    if (pin(options.from_cpu)) {
      start = clock.NowNs();
      const TimeNs until = start + options.duration_ns;
      for (uint64_t i = 0; clock.NowNs() < until; ++i) {
        while (i - read.value.load(std::memory_order_acquire) >= kBlocks) {
        }
        std::memcpy(&ring[(i % kBlocks) * kBlockBytes], source.data(), kBlockBytes);
        written.value.store(i + 1, std::memory_order_release);
      }
      while (read.value.load(std::memory_order_acquire) < written.value.load()) {
      }
      end = clock.NowNs();
    }
    stop.store(true, std::memory_order_release);
  });
  producer.join();
  consumer.join();
  if (failed.load()) {
    return FailedPreconditionError("cross-CPU probe: cannot pin a thread to CPU " +
                                   std::to_string(options.from_cpu) + " or " +
                                   std::to_string(options.to_cpu));
  }
  const double seconds = static_cast<double>(end - start) / kNsPerSec;
  if (seconds <= 0) return InternalError("cross-CPU probe: no time passed");
  return static_cast<double>(read.value.load()) * kBlockBytes * 8 / seconds / 1e9;
}

}  // namespace wharf::bench
