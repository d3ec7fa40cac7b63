// bench/slowdown_plot.h: draws a SlowdownReport the way the Homa papers
// do: P99 (solid) and P50 (dashed) slowdown per size bucket as steps over an
// x axis linear in the cumulative fraction of messages, ticks labelled with
// the message size at each decile, a log y axis, one colour per series
// (protocol + mode). Writes a gnuplot script and its data, then runs gnuplot
// (Debian gnuplot-nox) to make a PNG and an SVG.
//
// The script and data are plain text built by pure functions, so tests check
// them without gnuplot; only RunGnuplot starts a process. Callers write the
// JSON first, so a missing gnuplot costs the pictures, not the numbers.
#pragma once

#include <string>
#include <vector>

#include "base/clock.h"
#include "bench/slowdown.h"
#include "bench/workload.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::bench {

struct AxisTick {
  double x = 0;       // cumulative fraction of messages
  std::string label;  // "8", "1.9K", "3.4M"
};

// Decimal, two significant digits above 1000: 8, 662, 1.9K, 31K, 3.4M.
std::string CompactSize(uint64_t bytes);

// Ticks at fractions 0.1 .. 1.0, each labelled with the size there.
std::vector<AxisTick> DecileSizeTicks(const Workload& workload);

struct PlotOptions {
  std::string output_dir = ".";
  std::string basename = "slowdown";  // <basename>.gp, .dat, .png, .svg
  std::string title;                  // empty: "Slowdown, <workload>"
  std::string gnuplot = "gnuplot";    // looked up in PATH unless it has a '/'
  DurationNs timeout_ns = 60 * kNsPerSec;
};

struct PlotFiles {
  std::string script;
  std::string data;
  std::string png;
  std::string svg;
};

PlotFiles PlotPaths(const PlotOptions& options);

// The data file: one gnuplot index block per series, two rows per non-empty
// bucket ("x p50 p99" at cum_frac_lo and at cum_frac_hi) so that lines drawn
// through them are steps; a blank line breaks the line at an empty bucket.
std::string SlowdownPlotData(const SlowdownReport& report);
// The script that reads `files.data` and writes `files.png` and `files.svg`.
std::string SlowdownPlotScript(const SlowdownReport& report, const std::vector<AxisTick>& ticks,
                               const PlotFiles& files, const std::string& title);

// Writes the script and data into options.output_dir (which must exist).
Result<PlotFiles> WriteSlowdownPlotFiles(const SlowdownReport& report,
                                         const std::vector<AxisTick>& ticks,
                                         const PlotOptions& options);

// Runs options.gnuplot on files.script, waiting at most options.timeout_ns.
// NotFound when gnuplot is not installed (names the Debian package),
// DeadlineExceeded on the timeout (gnuplot is killed), Internal with
// gnuplot's own output when it fails or leaves a file unwritten.
Status RunGnuplot(const PlotFiles& files, const PlotOptions& options);

// WriteSlowdownPlotFiles, then RunGnuplot.
Result<PlotFiles> PlotSlowdown(const SlowdownReport& report, const std::vector<AxisTick>& ticks,
                               const PlotOptions& options);

}  // namespace wharf::bench
