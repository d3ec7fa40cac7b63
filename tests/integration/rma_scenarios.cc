// Remote-memory scenarios between processes (rma_scenarios.h).
#include "integration/rma_scenarios.h"

#include <gtest/gtest.h>

#include <thread>

namespace wharf::integration {
namespace {

// Bound on one `wharf rma` run (64 MiB over a veth takes well under a
// second; ASan builds on a loaded machine take more).
constexpr DurationNs kRmaTimeoutNs = 60 * kNsPerSec;

std::string Text(const Result<netns::CommandOutput>& out) {
  if (!out.ok()) return out.status().ToString();
  return "exit " + std::to_string(out->exit_code) + "\n" + out->stdout_text + out->stderr_text;
}

}  // namespace

Result<netns::CommandOutput> RunRma(const RmaClient& client, std::vector<std::string> args) {
  args.insert(args.begin(), "rma");
  for (const std::string& s : client.settings) args.insert(args.end(), {"--set", s});
  args.insert(args.end(), {"--timeout", "30", "--mode", "embedded"});
  return RunWharf(std::move(args), kRmaTimeoutNs, client.process);
}

void CheckEverySizeRoundTrips(const std::string& server, const RmaClient& client) {
  // Offsets 4099 and up: unaligned, not where the last size ended, and
  // clear of the words CheckConcurrentAtomicsLoseNothing uses.
  const std::vector<uint64_t> sizes = {0,      1,         4095,        4096, 4097,
                                       65536,  1 << 20,   uint64_t{64} << 20};
  uint64_t offset = 4099;
  for (uint64_t size : sizes) {
    if (offset + size > kRmaLendBytes) offset = 4099;  // the first 4 KiB: the atomics' words
    const std::string at = std::to_string(offset);
    auto write = size == 0 ? RunRma(client, {"write", server, "--offset", at, "--data", ""})
                           : RunRma(client, {"write", server, "--offset", at, "--pattern-bytes",
                                             std::to_string(size)});
    ASSERT_TRUE(write.ok() && write->exit_code == 0) << size << " B: " << Text(write);
    EXPECT_NE(write->stdout_text.find("wrote " + std::to_string(size) + " bytes at offset " + at),
              std::string::npos)
        << write->stdout_text;
    auto read = RunRma(client, {"read", server, "--offset", at, "--length", std::to_string(size),
                                "--verify"});
    ASSERT_TRUE(read.ok() && read->exit_code == 0) << size << " B: " << Text(read);
    EXPECT_NE(read->stdout_text.find("read " + std::to_string(size) + " bytes at offset " + at +
                                     ": the pattern, verified"),
              std::string::npos)
        << read->stdout_text;
    offset += size + 13;
  }
  // A write with immediate: the data is in place, byte for byte, once the
  // write returns (the server's report of the value is the CLI test's).
  auto imm = RunRma(client, {"write", server, "--offset", "5000", "--pattern-bytes",
                             std::to_string(1 << 20), "--immediate", "99"});
  ASSERT_TRUE(imm.ok() && imm->exit_code == 0) << Text(imm);
  EXPECT_NE(imm->stdout_text.find("then immediate 99"), std::string::npos) << imm->stdout_text;
  auto back = RunRma(client, {"read", server, "--offset", "5000", "--length",
                              std::to_string(1 << 20), "--verify"});
  ASSERT_TRUE(back.ok() && back->exit_code == 0) << Text(back);
}

void CheckConcurrentAtomicsLoseNothing(const std::string& server, const RmaClient& client) {
  constexpr int kAddsEach = 15;
  const std::string word = "0";  // offset 0: nothing else writes there
  auto cas = RunRma(client, {"cas", server, "--offset", word, "--expected", "0", "--desired",
                             "1000"});
  ASSERT_TRUE(cas.ok() && cas->exit_code == 0) << Text(cas);
  ASSERT_NE(cas->stdout_text.find("was 0: now 1000"), std::string::npos) << cas->stdout_text;
  auto again = RunRma(client, {"cas", server, "--offset", word, "--expected", "0", "--desired",
                               "5"});
  ASSERT_TRUE(again.ok() && again->exit_code == 0) << Text(again);
  EXPECT_NE(again->stdout_text.find("was 1000, not 0: unchanged"), std::string::npos)
      << again->stdout_text;

  // Two clients at once, each its own process per add.
  std::vector<std::string> failures[2];
  auto adder = [&](int who) {
    for (int i = 0; i < kAddsEach; ++i) {
      auto add = RunRma(client, {"add", server, "--offset", word, "--value", "1"});
      if (!add.ok() || add->exit_code != 0) failures[who].push_back(Text(add));
    }
  };
  std::thread a(adder, 0), b(adder, 1);
  a.join();
  b.join();
  for (const auto& f : failures) EXPECT_TRUE(f.empty()) << f.front();
  auto total = RunRma(client, {"add", server, "--offset", word, "--value", "0"});
  ASSERT_TRUE(total.ok() && total->exit_code == 0) << Text(total);
  EXPECT_NE(total->stdout_text.find("was " + std::to_string(1000 + 2 * kAddsEach)),
            std::string::npos)
      << total->stdout_text;
}

void CheckBadAccessIsRefused(const std::string& server, const RmaClient& client) {
  auto past = RunRma(client, {"write", server, "--offset", std::to_string(kRmaLendBytes - 2),
                              "--data", "xyz"});
  ASSERT_TRUE(past.ok()) << past.status();
  EXPECT_EQ(past->exit_code, 1) << Text(past);
  EXPECT_NE(past->stderr_text.find("OUT_OF_RANGE"), std::string::npos) << past->stderr_text;
  auto odd = RunRma(client, {"cas", server, "--offset", "12", "--expected", "0", "--desired", "1"});
  ASSERT_TRUE(odd.ok()) << odd.status();
  EXPECT_EQ(odd->exit_code, 1) << Text(odd);
  EXPECT_NE(odd->stderr_text.find("not 8-aligned"), std::string::npos) << odd->stderr_text;
}

}  // namespace wharf::integration
