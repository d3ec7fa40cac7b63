// SystemClock: the only place wharf reads the machine's clocks.
#include "base/clock.h"

#include <time.h>

namespace wharf {
namespace {

int64_t ReadNs(clockid_t id) {
  timespec ts;
  clock_gettime(id, &ts);
  return static_cast<int64_t>(ts.tv_sec) * kNsPerSec + ts.tv_nsec;
}

}  // namespace

SystemClock& SystemClock::Get() {
  static SystemClock clock;
  return clock;
}

TimeNs SystemClock::NowNs() const { return ReadNs(CLOCK_MONOTONIC); }

int64_t SystemClock::WallNs() const { return ReadNs(CLOCK_REALTIME); }

}  // namespace wharf
