// fuzz/fuzz_fail.h: how a fuzzer reports a broken promise (not a crash the
// sanitizers catch, but a wrong answer): the check's message and where it
// is, then abort, which libFuzzer records as a crash with its input.
#pragma once

#include <cstdio>
#include <cstdlib>

namespace wharf::fuzz {

// __builtin_FILE/LINE rather than std::source_location, which Debian 12's
// clang 14 lacks.
[[noreturn]] inline void Fail(const char* what, const char* file = __builtin_FILE(),
                              int line = __builtin_LINE()) {
  std::fprintf(stderr, "%s:%d: %s\n", file, line, what);
  std::abort();
}

}  // namespace wharf::fuzz
