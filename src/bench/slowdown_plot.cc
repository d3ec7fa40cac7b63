// Slowdown plots: gnuplot script and data text, writing them, running gnuplot.
#include "bench/slowdown_plot.h"

#include <sys/stat.h>

#include <cstdio>

#include "bench/child_process.h"
#include "bench/report.h"

namespace wharf::bench {
namespace {

// A gnuplot single-quoted string: only ' needs escaping, as ''.
std::string Quote(const std::string& text) {
  std::string out = "'";
  for (char c : text) {
    if (c == '\'') out += '\'';
    out += c;
  }
  return out + "'";
}

std::string Num(double value) {
  char text[64];
  std::snprintf(text, sizeof(text), "%.9g", value);
  return text;
}

bool NonEmptyFile(const std::string& path) {
  struct stat st {};
  return ::stat(path.c_str(), &st) == 0 && st.st_size > 0;
}

}  // namespace

std::string CompactSize(uint64_t bytes) {
  if (bytes < 1000) return std::to_string(bytes);
  const char* units[] = {"K", "M", "G", "T"};
  auto value = static_cast<double>(bytes) / 1000;
  size_t unit = 0;
  while (value >= 999.5 && unit + 1 < std::size(units)) {
    value /= 1000;
    ++unit;
  }
  char text[32];
  if (value < 9.95) {
    std::snprintf(text, sizeof(text), "%.1f%s", value, units[unit]);
  } else {
    std::snprintf(text, sizeof(text), "%.0f%s", value, units[unit]);
  }
  return text;
}

std::vector<AxisTick> DecileSizeTicks(const Workload& workload) {
  std::vector<AxisTick> ticks;
  for (int k = 1; k <= 10; ++k) {
    const double x = k / 10.0;
    ticks.push_back({x, CompactSize(workload.SizeAtFraction(x))});
  }
  return ticks;
}

PlotFiles PlotPaths(const PlotOptions& options) {
  const std::string base = options.output_dir + "/" + options.basename;
  return {base + ".gp", base + ".dat", base + ".png", base + ".svg"};
}

std::string SlowdownPlotData(const SlowdownReport& report) {
  std::string out;
  for (size_t i = 0; i < report.series.size(); ++i) {
    const SeriesStats& s = report.series[i];
    if (i > 0) out += "\n\n";  // next gnuplot index
    out += "# " + s.label + "\n# x slowdown_p50 slowdown_p99\n";
    bool any = false;
    for (const BucketStats& b : s.buckets) {
      if (b.count == 0) {
        out += "\n";
        continue;
      }
      any = true;
      const std::string values = " " + Num(b.slowdown_p50) + " " + Num(b.slowdown_p99) + "\n";
      out += Num(b.bucket.cum_frac_lo) + values;
      out += Num(b.bucket.cum_frac_hi) + values;
    }
    // gnuplot rejects an index block without points; a NaN row plots nothing.
    if (!any) out += "0 NaN NaN\n";
  }
  return out;
}

std::string SlowdownPlotScript(const SlowdownReport& report, const std::vector<AxisTick>& ticks,
                               const PlotFiles& files, const std::string& title) {
  std::string xtics;
  for (const AxisTick& t : ticks) {
    xtics += (xtics.empty() ? "" : ", ") + Quote(t.label) + " " + Num(t.x);
  }
  std::string s;
  s += "# Slowdown by message size, drawn as in the Homa papers; written by wharf bench.\n";
  s += "set title " + Quote(title.empty() ? "Slowdown, " + report.workload : title) + " noenhanced\n";
  s += "set xlabel 'Message size (bytes)'\n";
  s += "set x2label 'Cumulative % of messages'\n";
  s += "set ylabel 'Slowdown (P99 solid, P50 dashed)'\n";
  s += "set xrange [0:1]\nset x2range [0:100]\n";
  s += "set xtics (" + xtics + ")\n";
  s += "set x2tics 10\nset mxtics 1\n";
  s += "set logscale y\nset yrange [*<1:*]\n";
  // Beside the plot: inside, a legend of a dozen lines covered the short
  // messages' end, where the lines matter most.
  s += "set grid ytics\nset key outside right top noenhanced\n";
  s += "set datafile missing 'NaN'\n";
  std::string plot = "plot ";
  for (size_t i = 0; i < report.series.size(); ++i) {
    const std::string color = std::to_string(i + 1);
    const std::string label = report.series[i].label;
    if (i > 0) plot += ", \\\n     ";
    plot += Quote(files.data) + " index " + std::to_string(i) + " using 1:3 with lines lw 2 lc " +
            color + " dt 1 title " + Quote(label + " P99");
    plot += ", \\\n     " + Quote(files.data) + " index " + std::to_string(i) +
            " using 1:2 with lines lw 2 lc " + color + " dt 2 title " + Quote(label + " P50");
  }
  if (report.series.empty()) plot += "NaN notitle";
  s += "set terminal pngcairo size 1200,600 noenhanced\n";
  s += "set output " + Quote(files.png) + "\n" + plot + "\n";
  s += "set terminal svg size 1200,600 dynamic noenhanced\n";
  s += "set output " + Quote(files.svg) + "\nreplot\nunset output\n";
  return s;
}

Result<PlotFiles> WriteSlowdownPlotFiles(const SlowdownReport& report,
                                         const std::vector<AxisTick>& ticks,
                                         const PlotOptions& options) {
  const PlotFiles files = PlotPaths(options);
  WHARF_RETURN_IF_ERROR(WriteTextFile(files.data, SlowdownPlotData(report)));
  WHARF_RETURN_IF_ERROR(
      WriteTextFile(files.script, SlowdownPlotScript(report, ticks, files, options.title)));
  return files;
}

Status RunGnuplot(const PlotFiles& files, const PlotOptions& options) {
  if (!ChildProcess::FindExecutable(options.gnuplot).ok()) {
    return NotFoundError("plot: " + options.gnuplot +
                         " not found; install the Debian package gnuplot-nox (scripts/setup) to get " +
                         files.png + " and " + files.svg);
  }
  // Stale pictures from an earlier run must not pass for this one's.
  std::remove(files.png.c_str());
  std::remove(files.svg.c_str());
  WHARF_ASSIGN_OR_RETURN(ChildProcess child, ChildProcess::Exec({options.gnuplot, files.script}, -1));
  Result<ExitInfo> exit = child.Wait(options.timeout_ns);
  if (!exit.ok()) {
    child.KillAndReap();
    return DeadlineExceededError("plot: gnuplot " + files.script + " did not finish within " +
                                 std::to_string(options.timeout_ns / kNsPerSec) + " s");
  }
  if (!exit->ok()) {
    return InternalError("plot: gnuplot " + files.script + " failed (" + exit->ToString() +
                         "): " + child.Output());
  }
  for (const std::string& path : {files.png, files.svg}) {
    if (!NonEmptyFile(path)) {
      return InternalError("plot: gnuplot " + files.script + " did not write " + path + ": " +
                           child.Output());
    }
  }
  return OkStatus();
}

Result<PlotFiles> PlotSlowdown(const SlowdownReport& report, const std::vector<AxisTick>& ticks,
                               const PlotOptions& options) {
  WHARF_ASSIGN_OR_RETURN(PlotFiles files, WriteSlowdownPlotFiles(report, ticks, options));
  WHARF_RETURN_IF_ERROR(RunGnuplot(files, options));
  return files;
}

}  // namespace wharf::bench
