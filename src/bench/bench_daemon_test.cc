// BenchDaemon: starts the wharfd built beside this test, answers on its
// socket, and leaves no process and no files behind, also when the daemon
// cannot start.
#include "bench/bench_daemon.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <stdlib.h>
#include <unistd.h>

#include <cerrno>
#include <filesystem>

#include "wharf/endpoint.h"

namespace wharf::bench {
namespace {

// Points TMPDIR at a fresh directory for one test, so it can check that
// nothing is left in it.
class ScopedTmpDir {
 public:
  ScopedTmpDir() {
    const char* old = std::getenv("TMPDIR");
    if (old != nullptr) old_ = old;
    std::string pattern = std::filesystem::temp_directory_path().string() + "/bench-daemon-XXXXXX";
    dir_ = ::mkdtemp(pattern.data()) != nullptr ? pattern : "";
    ::setenv("TMPDIR", dir_.c_str(), 1);
  }
  ~ScopedTmpDir() {
    if (old_.empty()) {
      ::unsetenv("TMPDIR");
    } else {
      ::setenv("TMPDIR", old_.c_str(), 1);
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }
  bool Empty() const { return std::filesystem::is_empty(dir_); }
  const std::string& dir() const { return dir_; }

 private:
  std::string old_;
  std::string dir_;
};

bool Running(pid_t pid) { return ::kill(pid, 0) == 0 || errno != ESRCH; }

TEST(BenchDaemonTest, StartsAttachesAndCleansUp) {
  ScopedTmpDir tmp;
  ASSERT_FALSE(tmp.dir().empty());
  pid_t pid = -1;
  {
    auto d = BenchDaemon::Start({.command = {WHARFD_PATH}}, SystemClock::Get());
    ASSERT_TRUE(d.ok()) << d.status();
    pid = (*d)->pid();
    EXPECT_EQ((*d)->socket_path().rfind(tmp.dir(), 0), 0u) << (*d)->socket_path();
    auto ep = Endpoint::Open({.address = "homa://127.0.0.1:0",
                              .hosting = Hosting::kManaged,
                              .daemon_socket = (*d)->socket_path()});
    ASSERT_TRUE(ep.ok()) << ep.status();
    EXPECT_TRUE((*ep)->managed());
    EXPECT_EQ((*ep)->address().rfind("homa://127.0.0.1:", 0), 0u) << (*ep)->address();
  }
  EXPECT_FALSE(Running(pid));
  EXPECT_TRUE(tmp.Empty());
}

TEST(BenchDaemonTest, DaemonThatEndsAtStartIsReportedAndCleanedUp) {
  ScopedTmpDir tmp;
  // `wharfd --set no.such=1` refuses the unknown key and exits.
  auto d = BenchDaemon::Start({.command = {WHARFD_PATH, "--set", "no.such=1"}}, SystemClock::Get());
  ASSERT_FALSE(d.ok());
  EXPECT_NE(d.status().message().find("ended at start"), std::string::npos) << d.status();
  EXPECT_NE(d.status().message().find("unknown key"), std::string::npos) << d.status();
  EXPECT_TRUE(tmp.Empty());
}

TEST(BenchDaemonTest, MissingBinaryIsAnError) {
  ScopedTmpDir tmp;
  auto d = BenchDaemon::Start({.command = {"/nonexistent/wharfd"}}, SystemClock::Get());
  ASSERT_FALSE(d.ok());
  EXPECT_TRUE(tmp.Empty());
}

TEST(BenchDaemonTest, ArgvCarriesTheSettings) {
  auto argv = BenchDaemon::Argv({.command = {"wharf", "daemon"}, .address = "::1"},
                                "/tmp/x/wharfd.sock");
  auto has = [&](const std::string& s) {
    return std::find(argv.begin(), argv.end(), s) != argv.end();
  };
  EXPECT_EQ(argv[0], "wharf");
  EXPECT_EQ(argv[1], "daemon");
  EXPECT_TRUE(has("/tmp/x/wharfd.sock"));
  EXPECT_TRUE(has("listen.homa=[::1]:0"));
  EXPECT_TRUE(has("listen.tcp="));
}

}  // namespace
}  // namespace wharf::bench
