// Remote memory between processes on this host: a `wharf serve
// --lend-bytes` lends a block, `wharf rma` children write, read and add to
// it, over UCX's tcp on loopback and over its shared memory
// (integration/rma_scenarios.h; netns_rpc_test.cc runs the same between two
// hosts). A holder dying and a lender dying are in the API's own tests
// (src/client/remote_memory_test.cc), with the regions' lifetimes.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "integration/rma_scenarios.h"
#include "integration/wharf_process.h"

namespace wharf::integration {
namespace {

std::vector<std::string> SettingsFor(const std::string& path) {
  if (path == "shm") return {"ucx.tls=sm,tcp", "ucx.detect_peer_failure=false"};
  return {"ucx.tls=tcp", "ucx.devices=lo"};
}

class RmaAcrossProcessesTest : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override {
    auto server = ServeProcess::Start(
        {.listen = "ucx://127.0.0.1:0",
         .settings = SettingsFor(GetParam()),
         .args = {"--lend-bytes", std::to_string(kRmaLendBytes), "--mode", "embedded"},
         .process = {.label = "wharf serve --lend-bytes"}});
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = std::move(server).value();
    client_.settings = SettingsFor(GetParam());
  }

  std::unique_ptr<ServeProcess> server_;
  RmaClient client_;
};

TEST_P(RmaAcrossProcessesTest, EverySizeRoundTripsByteForByte) {
  CheckEverySizeRoundTrips(server_->address(), client_);
}

TEST_P(RmaAcrossProcessesTest, TwoClientsAddingAtOnceLoseNoUpdate) {
  CheckConcurrentAtomicsLoseNothing(server_->address(), client_);
}

TEST_P(RmaAcrossProcessesTest, BadAccessIsRefusedWithAClearError) {
  CheckBadAccessIsRefused(server_->address(), client_);
}

INSTANTIATE_TEST_SUITE_P(Paths, RmaAcrossProcessesTest, ::testing::Values("tcp", "shm"),
                         [](const ::testing::TestParamInfo<std::string>& info) {
                           return info.param;
                         });

}  // namespace
}  // namespace wharf::integration
