// netns/status_testing.h: ASSERT_OK / EXPECT_OK for the netns tests, which
// print the Status (command line, stderr) when it is not ok. Test-only.
#pragma once

#include <gtest/gtest.h>

#include "wharf/status.h"

// Evaluates `expr` (a Status) once; extra context may be streamed after,
// as with any gtest assertion.
#define WHARF_NETNS_CHECK_OK_(expr, fail)                                               \
  switch (0)                                                                            \
  case 0:                                                                               \
  default:                                                                              \
    if (const ::wharf::Status wharf_netns_status_ = (expr); wharf_netns_status_.ok()) { \
    } else                                                                              \
      fail() << #expr << " failed: " << wharf_netns_status_ << " "

#define ASSERT_OK(expr) WHARF_NETNS_CHECK_OK_(expr, FAIL)
#define EXPECT_OK(expr) WHARF_NETNS_CHECK_OK_(expr, ADD_FAILURE)
