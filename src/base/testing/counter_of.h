// base/testing/counter_of.h: one named counter out of the (name, value)
// lists that endpoints (Endpoint::Stats) and transports
// (MessageTransport::Counters) report. Test code only.
#pragma once

#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

namespace wharf::testing_support {

// The value of `name` in `counters`; 0, and a test failure, when absent.
inline uint64_t CounterOf(const std::vector<std::pair<std::string, uint64_t>>& counters,
                          std::string_view name) {
  for (const auto& [key, value] : counters) {
    if (key == name) return value;
  }
  ADD_FAILURE() << "no counter " << name;
  return 0;
}

}  // namespace wharf::testing_support
