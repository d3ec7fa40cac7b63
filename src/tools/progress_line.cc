// ProgressLine: "\r" and an erase-to-end on a terminal, whole lines elsewhere.
#include "tools/progress_line.h"

#include <unistd.h>

#include <cstdio>

namespace wharf::tools {

ProgressLine::ProgressLine(bool enabled, DurationNs log_every_ns)
    : enabled_(enabled),
      tty_(::isatty(STDERR_FILENO) == 1),
      log_every_ns_(log_every_ns),
      next_log_ns_(log_every_ns) {}

void ProgressLine::Show(const std::string& text, DurationNs elapsed_ns) {
  if (!enabled_) return;
  if (tty_) {
    std::fprintf(stderr, "\r%s\033[K", text.c_str());
    shown_ = true;
  } else {
    if (log_every_ns_ == 0 || elapsed_ns < next_log_ns_) return;
    next_log_ns_ = elapsed_ns + log_every_ns_;
    std::fprintf(stderr, "%s\n", text.c_str());
  }
  std::fflush(stderr);
}

void ProgressLine::Clear() {
  if (shown_ && tty_) {
    std::fprintf(stderr, "\r\033[K");
    std::fflush(stderr);
  }
  shown_ = false;
  next_log_ns_ = log_every_ns_;
}

}  // namespace wharf::tools
