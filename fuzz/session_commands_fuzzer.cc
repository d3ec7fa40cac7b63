// libFuzzer target for wharfd's per-application command execution
// (daemon/app_session.h): one AppSession on a FakeSessionHost (SimClock,
// FakeNetwork, no daemon or threads), attached over a socketpair, and the
// input played as a program of what a hostile application can do to its
// region: commands with boundary-leaning fields, raw ring indices, releases
// (and double releases) of what wharfd delivered, heap scribbles, time
// passing. daemon/testing/session_program.h is the driver (the suite runs
// it from a fixed seed in app_session_test.cc).
//
// The checks: nothing crashes or touches memory outside the region
// (ASan/UBSan), and a session wharfd closed stays closed.
#include <cstddef>
#include <cstdint>
#include <span>

#include "base/log.h"
#include "daemon/testing/session_program.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const bool quiet = [] {
    wharf::SetLogLevel(wharf::LogLevel::kError);
    return true;
  }();
  (void)quiet;
  (void)wharf::daemon::testing::RunSessionProgram(std::span(data, size));
  return 0;
}
