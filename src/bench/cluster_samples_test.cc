// Tests for the cluster node's sample file and the unloaded size ladder.
#include "bench/cluster_samples.h"

#include <gtest/gtest.h>

#include <cstdio>
#include <filesystem>

namespace wharf::bench {
namespace {

TEST(ClusterSamplesTest, EncodesMagicThenLittleEndianRecords) {
  const std::vector<RpcSample> samples = {{.request_bytes = 1, .response_bytes = 2, .rtt_ns = 3},
                                          {.request_bytes = 0x0102, .response_bytes = 0, .rtt_ns = -1}};
  const std::string bytes = EncodeSamples(samples);
  ASSERT_EQ(bytes.size(), 8u + 2 * 24u);
  EXPECT_EQ(bytes.substr(0, 8), "WBCSMP01");
  EXPECT_EQ(bytes[8], 1);   // request_bytes, low byte first
  EXPECT_EQ(bytes[16], 2);  // response_bytes
  EXPECT_EQ(bytes[24], 3);  // rtt_ns
  EXPECT_EQ(bytes[32], 0x02);
  EXPECT_EQ(bytes[33], 0x01);
  std::vector<RpcSample> back;
  ASSERT_TRUE(DecodeSamples(bytes, "x", &back).ok());
  ASSERT_EQ(back.size(), 2u);
  EXPECT_EQ(back[1].request_bytes, 0x0102u);
  EXPECT_EQ(back[1].rtt_ns, -1);
  EXPECT_EQ(back[0].response_bytes, 2u);
}

TEST(ClusterSamplesTest, RejectsWrongMagicAndPartialRecords) {
  std::vector<RpcSample> out;
  EXPECT_FALSE(DecodeSamples("NOTMAGIC", "f", &out).ok());
  std::string bytes = EncodeSamples(std::vector<RpcSample>{{}});
  bytes.pop_back();
  Status s = DecodeSamples(bytes, "f.bin", &out);
  EXPECT_FALSE(s.ok());
  EXPECT_NE(s.ToString().find("f.bin"), std::string::npos);
  EXPECT_TRUE(DecodeSamples("WBCSMP01", "empty", &out).ok());
  EXPECT_TRUE(out.empty());
}

TEST(ClusterSamplesTest, FileRoundTripAppends) {
  const std::string path =
      (std::filesystem::temp_directory_path() / ("wharf-samples-" + std::to_string(::getpid())))
          .string();
  const std::vector<RpcSample> samples = {{.request_bytes = 100, .response_bytes = 100, .rtt_ns = 5000}};
  ASSERT_TRUE(WriteSampleFile(path, samples).ok());
  std::vector<RpcSample> out = {{}};
  ASSERT_TRUE(ReadSampleFile(path, &out).ok());
  std::remove(path.c_str());
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(out[1].rtt_ns, 5000);
  EXPECT_FALSE(ReadSampleFile(path, &out).ok());
}

TEST(ClusterSamplesTest, UnloadedSizesSpanTheWorkload) {
  const std::vector<uint64_t> fixed = UnloadedSizes(Workload::Fixed(1000));
  EXPECT_EQ(fixed, std::vector<uint64_t>{1000});
  Result<Workload> w4 = Workload::FromSpec("w4", DefaultWorkloadDir());
  ASSERT_TRUE(w4.ok());
  const Workload cut = w4->Truncated(kHomaTruncationBytes);
  const std::vector<uint64_t> sizes = UnloadedSizes(cut, 12);
  ASSERT_GE(sizes.size(), 10u);
  EXPECT_EQ(sizes.front(), cut.min_bytes());
  EXPECT_EQ(sizes.back(), kHomaTruncationBytes);
  for (size_t i = 1; i < sizes.size(); ++i) EXPECT_LT(sizes[i - 1], sizes[i]);
}

}  // namespace
}  // namespace wharf::bench
