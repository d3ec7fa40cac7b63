// Tests for the cluster runner's lookup of the gRPC node beside the wharf
// binary (installed: same directory; build tree: grpc/ below it).
#include "bench/cluster_runner.h"

#include <gtest/gtest.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>

namespace wharf::bench {
namespace {

class FindGrpcNodeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    char dir[] = "/tmp/wharf-find-grpc-XXXXXX";
    ASSERT_NE(::mkdtemp(dir), nullptr);
    dir_ = dir;
    wharf_ = dir_ + "/wharf";
    Touch(wharf_, 0755);
  }
  void TearDown() override { std::filesystem::remove_all(dir_); }

  static void Touch(const std::string& path, mode_t mode) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    std::ofstream(path) << "#!/bin/sh\n";
    ASSERT_EQ(::chmod(path.c_str(), mode), 0);
  }

  std::string dir_;
  std::string wharf_;
};

TEST_F(FindGrpcNodeTest, FindsItBesideWharf) {
  Touch(dir_ + "/wharf-grpc-node", 0755);
  Touch(dir_ + "/grpc/wharf-grpc-node", 0755);
  Result<std::string> found = FindGrpcNode(wharf_);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, dir_ + "/wharf-grpc-node");
}

TEST_F(FindGrpcNodeTest, FindsItInTheBuildTreesGrpcDirectory) {
  Touch(dir_ + "/grpc/wharf-grpc-node", 0755);
  Result<std::string> found = FindGrpcNode(wharf_);
  ASSERT_TRUE(found.ok()) << found.status().ToString();
  EXPECT_EQ(*found, dir_ + "/grpc/wharf-grpc-node");
}

TEST_F(FindGrpcNodeTest, MissingOrNotExecutableSaysHowToGetIt) {
  Touch(dir_ + "/wharf-grpc-node", 0644);  // no execute bit: not even root runs it
  std::filesystem::create_directories(dir_ + "/grpc/wharf-grpc-node");  // a directory
  Result<std::string> found = FindGrpcNode(wharf_);
  ASSERT_FALSE(found.ok());
  EXPECT_EQ(found.status().code(), StatusCode::kNotFound);
  EXPECT_NE(found.status().message().find("wharf-grpc-node not found next to " + wharf_),
            std::string::npos)
      << found.status().message();
  EXPECT_NE(found.status().message().find("libgrpc++-dev"), std::string::npos);
}

}  // namespace
}  // namespace wharf::bench
