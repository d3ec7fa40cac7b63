// Tests for PrometheusText and the latency buckets: the exact text of each
// metric type, escaping, number forms, every misuse Finish reports, and
// promtool (the Prometheus project's own parser and linter) reading what the
// writer produced. The promtool tests need the Debian package `prometheus`
// and fail, not skip, without it.
#include "mesh/prometheus_text.h"

#include <fcntl.h>
#include <gtest/gtest.h>
#include <poll.h>
#include <signal.h>
#include <spawn.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <charconv>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string>
#include <string_view>
#include <tuple>

#include "base/histogram.h"
#include "mesh/testing/promtool.h"
#include "base/unique_fd.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::mesh {
namespace {

using testing::ExpectPromtoolSilent;
using testing::RunPromtool;
using testing::ToolRun;

// One gauge sample rendered alone; returns its value as written.
std::string GaugeValue(double value) {
  PrometheusText text;
  text.Family("wharf_test_value", MetricType::kGauge, "A value.");
  text.Sample({}, value);
  Result<std::string> out = text.Finish();
  if (!out.ok()) return out.status().ToString();
  const std::string_view body(*out);
  const size_t space = body.rfind(' ');
  return std::string(body.substr(space + 1, body.size() - space - 2));
}

std::string GaugeValue(uint64_t value) {
  PrometheusText text;
  text.Family("wharf_test_value", MetricType::kGauge, "A value.");
  text.Sample({}, value);
  Result<std::string> out = text.Finish();
  if (!out.ok()) return out.status().ToString();
  const std::string_view body(*out);
  const size_t space = body.rfind(' ');
  return std::string(body.substr(space + 1, body.size() - space - 2));
}

// Finish failed with kInvalidArgument, naming `metric` and saying `problem`.
void ExpectMisuse(PrometheusText& text, std::string_view metric, std::string_view problem) {
  Result<std::string> out = text.Finish();
  ASSERT_FALSE(out.ok()) << "rendered:\n" << *out;
  EXPECT_EQ(out.status().code(), StatusCode::kInvalidArgument);
  EXPECT_NE(out.status().message().find(metric), std::string::npos) << out.status();
  EXPECT_NE(out.status().message().find(problem), std::string::npos) << out.status();
}

// --- Family, Sample, HistogramSample ------------------------------------------

TEST(PrometheusTextTest, ACounterIsHelpThenTypeThenEverySampleOfTheFamily) {
  PrometheusText text;
  text.Family("wharf_probes_sent_total", MetricType::kCounter, "Probes sent to each target.");
  text.Sample({{"target", "b"}, {"transport", "homa"}}, uint64_t{42});
  text.Sample({{"target", "c"}, {"transport", "homa"}}, uint64_t{0});
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "# HELP wharf_probes_sent_total Probes sent to each target.\n"
            "# TYPE wharf_probes_sent_total counter\n"
            "wharf_probes_sent_total{target=\"b\",transport=\"homa\"} 42\n"
            "wharf_probes_sent_total{target=\"c\",transport=\"homa\"} 0\n");
}

TEST(PrometheusTextTest, AGaugeWithoutLabelsHasNoBraces) {
  PrometheusText text;
  text.Family("wharf_mesh_targets", MetricType::kGauge, "Targets in the pinglist.");
  text.Sample({}, 3.0);
  text.Family("wharf_probe_loss_ratio", MetricType::kGauge, "Lost probes / sent probes.");
  text.Sample({{"target", "b"}}, 0.25);
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "# HELP wharf_mesh_targets Targets in the pinglist.\n"
            "# TYPE wharf_mesh_targets gauge\n"
            "wharf_mesh_targets 3\n"
            "# HELP wharf_probe_loss_ratio Lost probes / sent probes.\n"
            "# TYPE wharf_probe_loss_ratio gauge\n"
            "wharf_probe_loss_ratio{target=\"b\"} 0.25\n");
}

TEST(PrometheusTextTest, AFamilyWithoutSamplesIsJustItsHelpAndType) {
  PrometheusText text;
  text.Family("wharf_probe_errors_total", MetricType::kCounter, "Probe errors.");
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "# HELP wharf_probe_errors_total Probe errors.\n"
            "# TYPE wharf_probe_errors_total counter\n");
}

TEST(PrometheusTextTest, HelpTextEscapesBackslashAndNewlineButNotQuotes) {
  PrometheusText text;
  text.Family("wharf_x_total", MetricType::kCounter, "C:\\path \"quoted\"\nsecond line");
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "# HELP wharf_x_total C:\\\\path \"quoted\"\\nsecond line\n"
            "# TYPE wharf_x_total counter\n");
}

TEST(PrometheusTextTest, ALabelValueWithQuotesBackslashesAndNewlinesIsEscaped) {
  PrometheusText text;
  text.Family("wharf_build_info", MetricType::kGauge, "Build.");
  text.Sample({{"version", "1.0 \"dev\""}, {"path", "C:\\wharf\n2"}, {"empty", ""}}, 1.0);
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(
      *out,
      "# HELP wharf_build_info Build.\n"
      "# TYPE wharf_build_info gauge\n"
      "wharf_build_info{version=\"1.0 \\\"dev\\\"\",path=\"C:\\\\wharf\\n2\",empty=\"\"} 1\n");
}

TEST(PrometheusTextTest, IntegersAreWrittenAsIntegers) {
  EXPECT_EQ(GaugeValue(0.0), "0");
  EXPECT_EQ(GaugeValue(-0.0), "0");
  EXPECT_EQ(GaugeValue(1e6), "1000000");
  EXPECT_EQ(GaugeValue(-42.0), "-42");
  EXPECT_EQ(GaugeValue(9007199254740991.0), "9007199254740991");  // 2^53 - 1
  EXPECT_EQ(GaugeValue(uint64_t{0}), "0");
  EXPECT_EQ(GaugeValue((uint64_t{1} << 53) + 1), "9007199254740993");  // no double holds it
  EXPECT_EQ(GaugeValue(std::numeric_limits<uint64_t>::max()), "18446744073709551615");
}

TEST(PrometheusTextTest, DoublesAreTheShortestTextThatParsesBackExactly) {
  EXPECT_EQ(GaugeValue(1.5), "1.5");
  EXPECT_EQ(GaugeValue(1e-7), "1e-07");
  EXPECT_EQ(GaugeValue(0.1), "0.1");
  EXPECT_EQ(GaugeValue(0.0001), "0.0001");
  EXPECT_EQ(GaugeValue(-2.5e-5), "-2.5e-05");
  EXPECT_EQ(GaugeValue(1234567.5), "1.2345675e+06");
  EXPECT_EQ(GaugeValue(1e300), "1e+300");
  EXPECT_EQ(GaugeValue(9007199254740992.0), "9.007199254740992e+15");  // 2^53: beyond exact
  for (const double value : {1.0 / 3, 0.1 + 0.2, 5e-324, 2.2250738585072014e-308,
                             std::numeric_limits<double>::max(), -123456.789, 6.02214076e23}) {
    const std::string written = GaugeValue(value);
    double parsed = 0;
    const auto result = std::from_chars(written.data(), written.data() + written.size(), parsed);
    ASSERT_EQ(result.ptr, written.data() + written.size()) << written;
    EXPECT_EQ(parsed, value) << written;
  }
}

TEST(PrometheusTextTest, InfinitiesAndNaNAreSpelledAsPrometheusParsesThem) {
  EXPECT_EQ(GaugeValue(std::numeric_limits<double>::infinity()), "+Inf");
  EXPECT_EQ(GaugeValue(-std::numeric_limits<double>::infinity()), "-Inf");
  EXPECT_EQ(GaugeValue(std::numeric_limits<double>::quiet_NaN()), "NaN");
}

TEST(PrometheusTextTest, AHistogramIsCumulativeBucketsThenInfThenSumAndCount) {
  PrometheusText text;
  text.Family("wharf_probe_rtt_seconds", MetricType::kHistogram, "Round-trip time of probes.");
  const std::array<double, 3> bounds{0.001, 0.0025, 0.005};
  const std::array<uint64_t, 3> counts{1, 3, 3};
  text.HistogramSample({{"target", "b"}}, bounds, counts, 4, 0.0125);
  text.HistogramSample({}, bounds, std::array<uint64_t, 3>{0, 0, 0}, 0, 0.0);
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  EXPECT_EQ(*out,
            "# HELP wharf_probe_rtt_seconds Round-trip time of probes.\n"
            "# TYPE wharf_probe_rtt_seconds histogram\n"
            "wharf_probe_rtt_seconds_bucket{target=\"b\",le=\"0.001\"} 1\n"
            "wharf_probe_rtt_seconds_bucket{target=\"b\",le=\"0.0025\"} 3\n"
            "wharf_probe_rtt_seconds_bucket{target=\"b\",le=\"0.005\"} 3\n"
            "wharf_probe_rtt_seconds_bucket{target=\"b\",le=\"+Inf\"} 4\n"
            "wharf_probe_rtt_seconds_sum{target=\"b\"} 0.0125\n"
            "wharf_probe_rtt_seconds_count{target=\"b\"} 4\n"
            "wharf_probe_rtt_seconds_bucket{le=\"0.001\"} 0\n"
            "wharf_probe_rtt_seconds_bucket{le=\"0.0025\"} 0\n"
            "wharf_probe_rtt_seconds_bucket{le=\"0.005\"} 0\n"
            "wharf_probe_rtt_seconds_bucket{le=\"+Inf\"} 0\n"
            "wharf_probe_rtt_seconds_sum 0\n"
            "wharf_probe_rtt_seconds_count 0\n");
}

TEST(PrometheusTextTest, BucketBoundsAreWrittenAsGoClientsWriteThem) {
  PrometheusText text;
  text.Family("wharf_probe_rtt_seconds", MetricType::kHistogram, "Round-trip time of probes.");
  text.HistogramSample({}, kLatencyBucketsSeconds, std::array<uint64_t, kLatencyBucketCount>{}, 0,
                       0.0);
  const std::array<double, 3> other{123456, 1e6, 1.5e7};
  text.Family("wharf_probe_size_bytes", MetricType::kHistogram, "Probe sizes.");
  text.HistogramSample({}, other, std::array<uint64_t, 3>{}, 0, 0.0);
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  // strconv.FormatFloat(bound, 'g', -1, 64), as client_golang writes `le`.
  std::string les;
  for (size_t at = out->find("le=\""); at != std::string::npos; at = out->find("le=\"", at + 1)) {
    les += out->substr(at + 4, out->find('"', at + 4) - at - 4) + " ";
  }
  EXPECT_EQ(les,
            "1e-06 2.5e-06 5e-06 1e-05 2.5e-05 5e-05 0.0001 0.00025 0.0005 0.001 0.0025 0.005 "
            "0.01 0.025 0.05 0.1 0.25 0.5 1 2.5 5 10 +Inf "
            "123456 1e+06 1.5e+07 +Inf ");
}

// --- misuse: Finish fails, naming the metric ---------------------------------

TEST(PrometheusTextTest, AMetricNameOutsideTheAlphabetFailsFinish) {
  for (const std::string_view name : {"wharf-rtt", "1wharf", "wharf rtt", "wharf_é", ""}) {
    PrometheusText text;
    text.Family(name, MetricType::kGauge, "Help.");
    ExpectMisuse(text, name.empty() ? "prometheus text: :" : name, "not a metric name");
  }
  PrometheusText colons;  // colons are valid, if reserved for recording rules
  colons.Family("wharf:rtt_seconds", MetricType::kGauge, "Help.");
  EXPECT_TRUE(colons.Finish().ok());
}

TEST(PrometheusTextTest, ACounterNotEndingInTotalFailsFinish) {
  PrometheusText text;
  text.Family("wharf_probes_sent", MetricType::kCounter, "Probes sent.");
  ExpectMisuse(text, "wharf_probes_sent", "_total");
}

TEST(PrometheusTextTest, EmptyOrNonUtf8HelpFailsFinish) {
  PrometheusText empty;
  empty.Family("wharf_x_total", MetricType::kCounter, "");
  ExpectMisuse(empty, "wharf_x_total", "no help text");
  PrometheusText binary;
  binary.Family("wharf_y_total", MetricType::kCounter, "bad \xff byte");
  ExpectMisuse(binary, "wharf_y_total", "not UTF-8");
}

TEST(PrometheusTextTest, SamplesOfAFamilyAfterAnotherFamilyStartedFailFinish) {
  PrometheusText text;
  text.Family("wharf_a_total", MetricType::kCounter, "A.");
  text.Sample({{"target", "b"}}, uint64_t{1});
  text.Family("wharf_b_total", MetricType::kCounter, "B.");
  text.Sample({{"target", "b"}}, uint64_t{1});
  text.Family("wharf_a_total", MetricType::kCounter, "A.");
  text.Sample({{"target", "c"}}, uint64_t{1});
  ExpectMisuse(text, "wharf_a_total", "family written twice");
}

TEST(PrometheusTextTest, AHistogramsBucketSumAndCountNamesAreTaken) {
  PrometheusText gauge_after;
  gauge_after.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
  gauge_after.Family("wharf_rtt_seconds_count", MetricType::kGauge, "Count.");
  ExpectMisuse(gauge_after, "wharf_rtt_seconds_count", "is family wharf_rtt_seconds's");
  PrometheusText histogram_after;
  histogram_after.Family("wharf_rtt_seconds_sum", MetricType::kGauge, "Sum.");
  histogram_after.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
  ExpectMisuse(histogram_after, "wharf_rtt_seconds",
               "series wharf_rtt_seconds_sum is family wharf_rtt_seconds_sum's");
}

TEST(PrometheusTextTest, ASampleBeforeAnyFamilyFailsFinish) {
  PrometheusText text;
  text.Sample({}, 1.0);
  ExpectMisuse(text, "(no family)", "before any Family");
}

TEST(PrometheusTextTest, ASampleOfTheWrongKindForTheFamilyFailsFinish) {
  PrometheusText plain_on_histogram;
  plain_on_histogram.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
  plain_on_histogram.Sample({}, 1.0);
  ExpectMisuse(plain_on_histogram, "wharf_rtt_seconds", "Sample on a histogram");
  PrometheusText histogram_on_gauge;
  histogram_on_gauge.Family("wharf_rtt_seconds", MetricType::kGauge, "RTT.");
  histogram_on_gauge.HistogramSample({}, {}, {}, 0, 0.0);
  ExpectMisuse(histogram_on_gauge, "wharf_rtt_seconds", "HistogramSample on a gauge");
}

TEST(PrometheusTextTest, ANegativeCounterFailsFinish) {
  PrometheusText text;
  text.Family("wharf_x_total", MetricType::kCounter, "X.");
  text.Sample({}, -1.0);
  ExpectMisuse(text, "wharf_x_total", "negative");
}

TEST(PrometheusTextTest, ALabelNameOutsideTheAlphabetFailsFinish) {
  for (const std::string_view name : {"0target", "tar-get", "tar:get", ""}) {
    PrometheusText text;
    text.Family("wharf_x_total", MetricType::kCounter, "X.");
    text.Sample({{"ok", "1"}, {name, "v"}}, uint64_t{1});
    ExpectMisuse(text, "wharf_x_total", "not a label name");
  }
}

TEST(PrometheusTextTest, ALabelNameStartingWithTwoUnderscoresFailsFinish) {
  PrometheusText text;
  text.Family("wharf_x_total", MetricType::kCounter, "X.");
  text.Sample({{"__name__", "y"}}, uint64_t{1});
  ExpectMisuse(text, "wharf_x_total", "reserved");
}

TEST(PrometheusTextTest, ALeOrQuantileLabelFromTheCallerFailsFinish) {
  PrometheusText histogram;
  histogram.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
  histogram.HistogramSample({{"le", "1"}}, {}, {}, 0, 0.0);
  ExpectMisuse(histogram, "wharf_rtt_seconds", "label \"le\"");
  PrometheusText gauge;
  gauge.Family("wharf_rtt_p99_seconds", MetricType::kGauge, "RTT.");
  gauge.Sample({{"quantile", "0.99"}}, 1.0);
  ExpectMisuse(gauge, "wharf_rtt_p99_seconds", "label \"quantile\"");
}

TEST(PrometheusTextTest, TheSameLabelTwiceInASampleFailsFinish) {
  PrometheusText text;
  text.Family("wharf_x_total", MetricType::kCounter, "X.");
  text.Sample({{"target", "b"}, {"transport", "homa"}, {"target", "c"}}, uint64_t{1});
  ExpectMisuse(text, "wharf_x_total", "\"target\" given twice");
}

TEST(PrometheusTextTest, TheSameLabelSetTwiceInAFamilyFailsFinishWhateverTheOrder) {
  PrometheusText text;
  text.Family("wharf_x_total", MetricType::kCounter, "X.");
  text.Sample({{"target", "b"}, {"transport", "homa"}}, uint64_t{1});
  text.Sample({{"target", "b\",transport=\"homa"}}, uint64_t{1});  // not the same set
  text.Sample({{"transport", "homa"}, {"target", "b"}}, uint64_t{2});
  ExpectMisuse(text, "wharf_x_total", "same label set twice");
}

TEST(PrometheusTextTest, ALabelValueThatIsNotUtf8FailsFinish) {
  PrometheusText text;
  text.Family("wharf_x_total", MetricType::kCounter, "X.");
  text.Sample({{"target", "b\xc3"}}, uint64_t{1});
  ExpectMisuse(text, "wharf_x_total", "not UTF-8");
}

TEST(PrometheusTextTest, BucketBoundsThatAreNotStrictlyIncreasingFailFinish) {
  const std::array<uint64_t, 3> counts{0, 0, 0};
  const std::array<double, 3> equal{0.1, 0.2, 0.2};
  const std::array<double, 3> decreasing{0.1, 0.05, 0.2};
  for (const std::array<double, 3>& bounds : {equal, decreasing}) {
    PrometheusText text;
    text.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
    text.HistogramSample({}, bounds, counts, 0, 0.0);
    ExpectMisuse(text, "wharf_rtt_seconds", "not strictly increasing");
  }
  const std::array<double, 3> with_inf{0.1, 0.2, std::numeric_limits<double>::infinity()};
  const std::array<double, 3> with_nan{0.1, std::numeric_limits<double>::quiet_NaN(), 0.2};
  for (const std::array<double, 3>& bounds : {with_inf, with_nan}) {
    PrometheusText text;
    text.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
    text.HistogramSample({}, bounds, counts, 0, 0.0);
    ExpectMisuse(text, "wharf_rtt_seconds", "not finite");
  }
}

TEST(PrometheusTextTest, CumulativeCountsThatDecreaseFailFinish) {
  const std::array<double, 3> bounds{0.1, 0.2, 0.3};
  PrometheusText decreasing;
  decreasing.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
  decreasing.HistogramSample({}, bounds, std::array<uint64_t, 3>{1, 3, 2}, 3, 0.5);
  ExpectMisuse(decreasing, "wharf_rtt_seconds", "decrease");
  PrometheusText above_count;
  above_count.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
  above_count.HistogramSample({}, bounds, std::array<uint64_t, 3>{1, 2, 3}, 2, 0.5);
  ExpectMisuse(above_count, "wharf_rtt_seconds", "exceed the total count");
}

TEST(PrometheusTextTest, BoundsAndCountsOfDifferentLengthsFailFinish) {
  PrometheusText text;
  text.Family("wharf_rtt_seconds", MetricType::kHistogram, "RTT.");
  text.HistogramSample({}, std::array<double, 2>{0.1, 0.2}, std::array<uint64_t, 1>{1}, 1, 0.1);
  ExpectMisuse(text, "wharf_rtt_seconds", "2 bucket bounds but 1 counts");
}

// --- Finish ------------------------------------------------------------------

TEST(PrometheusTextTest, TheFirstMisuseWinsAndNothingAfterItIsWritten) {
  PrometheusText text;
  text.Family("wharf_first_total", MetricType::kCounter, "First.");
  text.Sample({{"__bad", "1"}}, uint64_t{1});
  text.Family("wharf_second", MetricType::kCounter, "Second.");
  text.Sample({}, -1.0);
  ExpectMisuse(text, "wharf_first_total", "reserved");
}

TEST(PrometheusTextTest, FinishLeavesTheWriterEmptyForTheNextRendering) {
  PrometheusText text;
  text.Family("wharf_x_total", MetricType::kCounter, "");
  EXPECT_FALSE(text.Finish().ok());
  text.Family("wharf_x_total", MetricType::kCounter, "X.");
  text.Sample({}, uint64_t{1});
  Result<std::string> first = text.Finish();
  ASSERT_TRUE(first.ok()) << first.status();
  text.Family("wharf_x_total", MetricType::kCounter, "X.");  // not "written twice"
  text.Sample({}, uint64_t{2});
  Result<std::string> second = text.Finish();
  ASSERT_TRUE(second.ok()) << second.status();
  EXPECT_EQ(*second, "# HELP wharf_x_total X.\n# TYPE wharf_x_total counter\nwharf_x_total 2\n");
  Result<std::string> empty = text.Finish();
  ASSERT_TRUE(empty.ok()) << empty.status();
  EXPECT_EQ(*empty, "");
}

// --- kLatencyBucketsSeconds, ToPrometheusLatency --------------------------------

TEST(PrometheusTextTest,
     LatencyBucketsRunFromOneMicrosecondToTenSecondsInOneTwoPointFiveFiveSteps) {
  ASSERT_EQ(kLatencyBucketCount, 22u);
  EXPECT_EQ(kLatencyBucketsSeconds.front(), 1e-6);
  EXPECT_EQ(kLatencyBucketsSeconds.back(), 10.0);
  double decade = 1e-6;
  for (size_t i = 0; i < kLatencyBucketCount; ++i) {
    const double expected = std::array<double, 3>{1, 2.5, 5}[i % 3] * decade;
    EXPECT_NEAR(kLatencyBucketsSeconds[i], expected, expected * 1e-12) << i;
    EXPECT_EQ(kLatencyBucketsSeconds[i], static_cast<double>(kLatencyBucketsNs[i]) / 1e9);
    if (i % 3 == 2) decade *= 10;
  }
}

TEST(PrometheusTextTest, ALatencyCountsAtTheFirstBoundAboveItsWholeBucket) {
  Histogram latency_ns;
  latency_ns.Record(200);                // exact bucket: le=1e-06
  latency_ns.Record(999);                // bucket [996, 999]: le=1e-06
  latency_ns.Record(1'000);              // bucket [1000, 1003] straddles 1 µs: le=2.5e-06
  latency_ns.Record(2'000'000);          // 2 ms: le=0.0025
  latency_ns.Record(20'000'000'000, 2);  // 20 s: only +Inf
  const PrometheusLatency buckets = ToPrometheusLatency(latency_ns);
  std::array<uint64_t, kLatencyBucketCount> expected{};
  expected.fill(4);
  expected[0] = 2;
  for (size_t i = 1; i < 10; ++i) expected[i] = 3;  // 2.5e-06 .. 0.001
  EXPECT_EQ(buckets.cumulative_counts, expected);
  EXPECT_EQ(buckets.count, 6u);
  EXPECT_DOUBLE_EQ(buckets.sum_seconds, (200 + 999 + 1'000 + 2'000'000 + 40'000'000'000.0) / 1e9);
}

TEST(PrometheusTextTest, OverflowedLatenciesCountOnlyInTheTotal) {
  Histogram latency_ns(/*max_value=*/1'000'000);
  latency_ns.Record(500);
  latency_ns.Record(5'000'000);  // above max_value: in no bucket
  const PrometheusLatency buckets = ToPrometheusLatency(latency_ns);
  EXPECT_EQ(buckets.cumulative_counts.back(), 1u);
  EXPECT_EQ(buckets.count, 2u);
}

TEST(PrometheusTextTest, AnEmptyLatencyHistogramIsAllZeros) {
  const PrometheusLatency buckets = ToPrometheusLatency(Histogram());
  EXPECT_EQ(buckets.cumulative_counts, (std::array<uint64_t, kLatencyBucketCount>{}));
  EXPECT_EQ(buckets.count, 0u);
  EXPECT_EQ(buckets.sum_seconds, 0.0);
}

// --- the real client ---------------------------------------------------------

TEST(PrometheusTextTest, PromtoolAcceptsARealisticExpositionWithoutAWord) {
  Histogram homa_b;
  Histogram tcp_b;
  Histogram homa_c;
  for (uint64_t i = 1; i <= 1'000; ++i) {
    homa_b.Record(8'000 + i * 37);
    tcp_b.Record(40'000 + i * 411);
    if (i % 10 == 0) homa_c.Record(i * 1'000'003);
  }
  PrometheusText text;
  text.Family("wharf_probe_rtt_seconds", MetricType::kHistogram,
              "Round-trip time of mesh probes, by target and transport.");
  for (const auto& [target, transport, histogram] :
       {std::tuple<std::string_view, std::string_view, const Histogram&>{"host-b", "homa", homa_b},
        {"host-b", "tcp", tcp_b},
        {"host-c", "homa", homa_c}}) {
    const PrometheusLatency b = ToPrometheusLatency(histogram);
    text.HistogramSample({{"target", target}, {"transport", transport}}, kLatencyBucketsSeconds,
                         b.cumulative_counts, b.count, b.sum_seconds);
  }
  text.Family("wharf_probes_sent_total", MetricType::kCounter, "Probes sent.");
  text.Sample({{"target", "host-b"}, {"transport", "homa"}}, uint64_t{1'000});
  text.Sample({{"target", "host-b"}, {"transport", "tcp"}}, uint64_t{1'000});
  text.Sample({{"target", "host-c"}, {"transport", "homa"}}, uint64_t{(uint64_t{1} << 53) + 1});
  text.Family("wharf_probes_lost_total", MetricType::kCounter, "Probes without a reply.");
  text.Sample({{"target", "host-c"}, {"transport", "homa"}}, uint64_t{900});
  text.Family("wharf_probe_sent_bytes_total", MetricType::kCounter, "Probe bytes sent.");
  text.Sample({{"target", "host-b"}}, 1.5e12);
  text.Family("wharf_probe_last_rtt_seconds", MetricType::kGauge,
              "Last round-trip time; NaN before the first reply.\nA second \\ line.");
  text.Sample({{"target", "host-b"}}, 1.25e-5);
  text.Sample({{"target", "host-c"}}, std::numeric_limits<double>::quiet_NaN());
  text.Family("wharf_probe_deadline_seconds", MetricType::kGauge, "Time left; +Inf when idle.");
  text.Sample({{"target", "host-b"}}, std::numeric_limits<double>::infinity());
  text.Sample({{"target", "host-c"}}, -std::numeric_limits<double>::infinity());
  text.Family("wharf_mesh_targets", MetricType::kGauge, "Targets in the pinglist.");
  text.Sample({}, 2.0);
  text.Family("wharf_build_info", MetricType::kGauge, "Version of the running wharfd.");
  text.Sample({{"version", "0.9 \"dev\""}, {"compiler", "gcc\\12"}}, 1.0);
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectPromtoolSilent(*out);
}

TEST(PrometheusTextTest, PromtoolAcceptsUnicodeQuotesBackslashesAndNewlinesInLabelValues) {
  PrometheusText text;
  text.Family("wharf_probe_rtt_seconds", MetricType::kHistogram, "RTT: «µs» \\ \" \n ok.");
  const std::array<double, 3> bounds{1e-6, 0.0001, 1e6};
  text.HistogramSample({{"target", "hôte-ß \"à\" \\ 東京 🚢\n{le=\"1\"}, a=b"}}, bounds,
                       std::array<uint64_t, 3>{1, 1, 2}, 3, 1e6 + 1.5e-6);
  text.HistogramSample({{"target", "\\\\\\\""}}, bounds, std::array<uint64_t, 3>{}, 0, 0.0);
  text.Family("wharf_tricky_total", MetricType::kCounter, "Tricky.");
  text.Sample({{"a", "\\n"}, {"b", "\n"}, {"c", "\"\""}, {"d", ""}, {"_e", "}"}}, uint64_t{1});
  text.Sample({{"a", "\\"}}, uint64_t{2});
  Result<std::string> out = text.Finish();
  ASSERT_TRUE(out.ok()) << out.status();
  ExpectPromtoolSilent(*out);
}

TEST(PrometheusTextTest, PromtoolReportsWhatItRejectsSoTheChecksAboveMeanSomething) {
  // Hand-written, not by the writer: an unescaped quote and a missing _total.
  Result<ToolRun> broken = RunPromtool(
      "# HELP wharf_x_total X.\n# TYPE wharf_x_total counter\nwharf_x_total{a=\"\"\"} 1\n");
  ASSERT_TRUE(broken.ok()) << broken.status();
  EXPECT_NE(broken->exit_code, 0);
  EXPECT_NE(broken->output, "");
  Result<ToolRun> lint = RunPromtool("# HELP wharf_x X.\n# TYPE wharf_x counter\nwharf_x 1\n");
  ASSERT_TRUE(lint.ok()) << lint.status();
  EXPECT_NE(lint->exit_code, 0);
  EXPECT_NE(lint->output.find("_total"), std::string::npos) << lint->output;
}

}  // namespace
}  // namespace wharf::mesh
