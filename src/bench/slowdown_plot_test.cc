// Tests for the slowdown plots: tick labels, the data and script text, and a
// real gnuplot run producing a PNG and an SVG from a tiny report (skipped
// only when gnuplot is not installed).
#include "bench/slowdown_plot.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "bench/child_process.h"

namespace wharf::bench {
namespace {

using ::testing::HasSubstr;

// A directory of its own, removed with everything in it.
class TempDir {
 public:
  TempDir() {
    std::string pattern = (std::filesystem::temp_directory_path() / "wharf-plot-XXXXXX").string();
    path_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
  }
  ~TempDir() {
    std::error_code ignored;
    if (!path_.empty()) std::filesystem::remove_all(path_, ignored);
  }
  const std::string& path() const { return path_; }

 private:
  std::string path_;
};

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

// Two series over two buckets of [0, 0.5] and [0.5, 1]; the second series
// has nothing in the first bucket.
SlowdownReport TinyReport() {
  SlowdownReport r;
  r.workload = "w3 (cut at 1000000 B)";
  SizeBucket lo{10, 20, 0.0, 0.5};
  SizeBucket hi{40, 80, 0.5, 1.0};
  r.buckets = {lo, hi};
  SeriesStats a;
  a.label = "wharf poll";
  BucketStats a0;
  a0.bucket = lo;
  a0.count = 5;
  a0.slowdown_p50 = 1.5;
  a0.slowdown_p99 = 3;
  BucketStats a1;
  a1.bucket = hi;
  a1.count = 5;
  a1.slowdown_p50 = 2;
  a1.slowdown_p99 = 8;
  a.buckets = {a0, a1};
  SeriesStats b;
  b.label = "tcp's block";  // a quote to escape
  BucketStats b0;
  b0.bucket = lo;
  BucketStats b1 = a1;
  b1.slowdown_p50 = 20;
  b1.slowdown_p99 = 300;
  b.buckets = {b0, b1};
  r.series = {a, b};
  return r;
}

TEST(SlowdownPlotTest, CompactSizes) {
  EXPECT_EQ(CompactSize(8), "8");
  EXPECT_EQ(CompactSize(999), "999");
  EXPECT_EQ(CompactSize(1000), "1.0K");
  EXPECT_EQ(CompactSize(1876), "1.9K");
  EXPECT_EQ(CompactSize(31013), "31K");
  EXPECT_EQ(CompactSize(999999), "1.0M");
  EXPECT_EQ(CompactSize(3430822), "3.4M");
  EXPECT_EQ(CompactSize(29400000), "29M");
}

TEST(SlowdownPlotTest, DecileTicksOfW1) {
  Result<Workload> w1 = Workload::FromSpec("w1", DefaultWorkloadDir());
  ASSERT_TRUE(w1.ok());
  std::vector<AxisTick> ticks = DecileSizeTicks(*w1);
  ASSERT_EQ(ticks.size(), 10u);
  EXPECT_DOUBLE_EQ(ticks[0].x, 0.1);
  EXPECT_EQ(ticks[0].label, "8");  // 31% of W1 is 8 B
  EXPECT_EQ(ticks[4].label, "27");  // the median in the shared README
  EXPECT_EQ(ticks[9].label, "100K");
}

TEST(SlowdownPlotTest, DataIsStepsPerSeries) {
  EXPECT_EQ(SlowdownPlotData(TinyReport()),
            "# wharf poll\n# x slowdown_p50 slowdown_p99\n"
            "0 1.5 3\n0.5 1.5 3\n0.5 2 8\n1 2 8\n"
            "\n\n"
            "# tcp's block\n# x slowdown_p50 slowdown_p99\n"
            "\n0.5 20 300\n1 20 300\n");
}

TEST(SlowdownPlotTest, ScriptDrawsBothPercentilesPerSeries) {
  PlotOptions options;
  options.output_dir = "/o";
  const std::string s = SlowdownPlotScript(TinyReport(), {{0.5, "20"}, {1, "80"}},
                                           PlotPaths(options), "");
  EXPECT_THAT(s, HasSubstr("set title 'Slowdown, w3 (cut at 1000000 B)'"));
  EXPECT_THAT(s, HasSubstr("set xtics ('20' 0.5, '80' 1)"));
  EXPECT_THAT(s, HasSubstr("set logscale y"));
  EXPECT_THAT(s, HasSubstr("'/o/slowdown.dat' index 0 using 1:3 with lines lw 2 lc 1 dt 1 title 'wharf poll P99'"));
  EXPECT_THAT(s, HasSubstr("index 1 using 1:2 with lines lw 2 lc 2 dt 2 title 'tcp''s block P50'"));
  EXPECT_THAT(s, HasSubstr("set output '/o/slowdown.png'"));
  EXPECT_THAT(s, HasSubstr("set output '/o/slowdown.svg'"));
}

TEST(SlowdownPlotTest, MissingGnuplotIsAClearError) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  PlotOptions options;
  options.output_dir = dir.path();
  options.gnuplot = "/nonexistent/gnuplot";
  Result<PlotFiles> files = PlotSlowdown(TinyReport(), {}, options);
  ASSERT_FALSE(files.ok());
  EXPECT_EQ(files.status().code(), StatusCode::kNotFound);
  EXPECT_THAT(files.status().ToString(), HasSubstr("gnuplot-nox"));
  // The script and data are still there to run by hand.
  EXPECT_TRUE(std::filesystem::exists(dir.path() + "/slowdown.gp"));
}

TEST(SlowdownPlotTest, FailingGnuplotReportsIt) {
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  PlotOptions options;
  options.output_dir = dir.path();
  options.gnuplot = "false";
  Result<PlotFiles> files = PlotSlowdown(TinyReport(), {}, options);
  ASSERT_FALSE(files.ok());
  EXPECT_THAT(files.status().ToString(), HasSubstr("failed (exit code 1)"));
}

TEST(SlowdownPlotTest, GnuplotWritesPngAndSvg) {
  if (!ChildProcess::FindExecutable("gnuplot").ok()) {
    GTEST_SKIP() << "gnuplot is not installed (Debian gnuplot-nox, in scripts/packages.txt)";
  }
  TempDir dir;
  ASSERT_FALSE(dir.path().empty());
  PlotOptions options;
  options.output_dir = dir.path();
  options.basename = "slowdown_w3";
  options.timeout_ns = 60 * kNsPerSec;
  Result<PlotFiles> files = PlotSlowdown(TinyReport(), {{0.5, "20"}, {1.0, "80"}}, options);
  ASSERT_TRUE(files.ok()) << files.status().ToString();
  const std::string png = ReadFile(files->png);
  ASSERT_GT(png.size(), 8u);
  EXPECT_EQ(png.substr(0, 8), std::string("\x89PNG\r\n\x1a\n", 8));
  const std::string svg = ReadFile(files->svg);
  EXPECT_THAT(svg, HasSubstr("<svg"));
  EXPECT_THAT(svg, HasSubstr("wharf poll P99"));
  EXPECT_THAT(svg, HasSubstr("tcp's block P50"));
}

}  // namespace
}  // namespace wharf::bench
