// base/sanitizer_build.h: whether this binary (and so, in a test, the wharfd
// and wharf built with the same flags) runs under ASan or TSan. Tests that
// measure time, memory or lock contention widen or skip their bounds there:
// a sanitizer's shadow memory and quarantine are not wharf's, and its checks
// hold every lock several times longer.
#pragma once

#if defined(__has_feature)
#if __has_feature(address_sanitizer) || __has_feature(thread_sanitizer)
#define WHARF_TEST_SANITIZED 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
#define WHARF_TEST_SANITIZED 1
#endif

namespace wharf {

#ifdef WHARF_TEST_SANITIZED
inline constexpr bool kSanitizedBuild = true;
#else
inline constexpr bool kSanitizedBuild = false;
#endif

}  // namespace wharf
