// tools/progress_line.h: ProgressLine, a line on stderr that says how far a
// long command has come. On a terminal it is rewritten in place and erased
// before the result is printed. Elsewhere (a log, a pipe) it is either
// silent or, for commands that run for minutes, one full line every few
// seconds, so that logs stay short and results never share a line with it.
#pragma once

#include <string>

#include "base/clock.h"

namespace wharf::tools {

class ProgressLine {
 public:
  // `enabled`: the command was not asked to be quiet. `log_every_ns`: off
  // a terminal, one full line this often (0: none at all).
  explicit ProgressLine(bool enabled, DurationNs log_every_ns = 0);
  ~ProgressLine() { Clear(); }
  ProgressLine(const ProgressLine&) = delete;
  ProgressLine& operator=(const ProgressLine&) = delete;

  // Shows `text` as the progress at `elapsed_ns` into the run.
  void Show(const std::string& text, DurationNs elapsed_ns);
  // Erases the line (on a terminal) before other output.
  void Clear();

 private:
  const bool enabled_;
  const bool tty_;
  const DurationNs log_every_ns_;
  bool shown_ = false;
  DurationNs next_log_ns_;
};

}  // namespace wharf::tools
