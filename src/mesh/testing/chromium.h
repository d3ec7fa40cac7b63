// mesh/testing/chromium.h: headless Chromium as a test's real browser (the
// dashboard's tests load the page with it, dump the DOM it built, read its
// console log and take a screenshot). One call runs one browser to
// completion, bounded in time, and leaves nothing behind: no process, no
// profile directory. It does not serve pages or judge them; the test does.
//
// Needs the Debian package `chromium` (scripts/packages.txt; CI installs
// it). Without it every run fails with a message saying so, never skips.
#pragma once

#include <string>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "wharf/result.h"

namespace wharf::mesh::testing {

// Where Debian's `chromium` package puts its launcher.
inline constexpr char kChromiumPath[] = "/usr/bin/chromium";

struct ChromiumRun {
  std::string url;
  // The browser to run; tests of this helper point it elsewhere.
  std::string binary = kChromiumPath;
  // What to do with the page, after the fixed switches (headless, no
  // sandbox, no GPU, a fresh profile, logging to stderr): "--dump-dom",
  // "--screenshot=PATH", "--window-size=W,H".
  std::vector<std::string> switches;
  // Virtual time the page runs before the dump or screenshot, in ms: its
  // timers fire, and the clock stops while its fetches are in flight. 0:
  // no budget, the page runs in real time (and without --dump-dom or
  // --screenshot the browser runs until killed).
  int virtual_time_budget_ms = 5000;
  // Real time after which the browser is killed and the run fails.
  DurationNs timeout = 60 * kNsPerSec;
  // Where the run's temporary directory (profile, HOME, captured output) is
  // made; empty: $TMPDIR, else /tmp.
  std::string temp_parent;
};

struct ChromiumOutput {
  // The browser's exit code, or 128 + the signal that ended it.
  int exit_code = -1;
  std::string stdout_text;  // the DOM, with --dump-dom
  std::string stderr_text;  // its log, the page's console lines included
};

// Runs run.binary on run.url and waits for it. Before returning, every
// process of the run (the browser, its zygotes, renderers, utilities and
// crash handlers, found by the run's temporary directory in their command
// lines) has been killed and has exited, and the directory is removed.
// Errors: FailedPrecondition when run.binary is missing (naming the
// package to install);
// DeadlineExceeded after run.timeout, with the tail of its log; Internal
// when a process of the run would not die within 10 s.
Result<ChromiumOutput> RunHeadlessChromium(const ChromiumRun& run);

// The lines of a Chromium log that the page's console printed: its
// console.log/warn/error calls and uncaught exceptions ("Uncaught ...").
// Chromium logs each as `[...:INFO:CONSOLE:<line>] "<text>", source: <url>`
// whatever its level, so a page that never logs has none.
std::vector<std::string> ConsoleLines(std::string_view log);

// Processes whose command line contains `needle`, e.g. a run's directory;
// zombies (which have none) are not counted.
std::vector<int> ProcessesMentioning(std::string_view needle);

}  // namespace wharf::mesh::testing
