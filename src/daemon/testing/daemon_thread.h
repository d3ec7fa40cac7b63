// daemon/testing/daemon_thread.h: DaemonThread, a wharfd running on a thread
// of the test process, on a control socket in a fresh temporary directory
// and a homa:// socket on 127.0.0.1 (any port). For tests of managed mode;
// applications in the same process attach to it like separate ones would
// (over the socket, through their own mapping of the region).
#pragma once

#include <stdlib.h>
#include <unistd.h>

#include <filesystem>
#include <memory>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "daemon/wharfd.h"

namespace wharf::daemon::testing {

class DaemonThread {
 public:
  // `settings` are daemon config overrides ({"limits.max_inflight", "8"}).
  static Result<std::unique_ptr<DaemonThread>> Start(
      std::vector<std::pair<std::string, std::string>> settings = {}) {
    char dir_template[] = "/tmp/wharfd-test-XXXXXX";
    if (::mkdtemp(dir_template) == nullptr) return InternalError("mkdtemp failed");
    std::unique_ptr<DaemonThread> t(new DaemonThread(dir_template));
    settings.insert(settings.begin(), {"daemon.socket", t->dir_ + "/wharfd.sock"});
    settings.insert(settings.begin(), {"listen.homa", "127.0.0.1:0"});
    settings.insert(settings.begin(), {"listen.tcp", ""});
    WHARF_ASSIGN_OR_RETURN(DaemonConfig config, LoadDaemonConfig("", settings));
    WHARF_ASSIGN_OR_RETURN(t->daemon_, Daemon::Start(std::move(config)));
    t->thread_ = std::thread([d = t->daemon_.get()] { (void)d->Run(); });
    return t;
  }
  ~DaemonThread() { Stop(); }

  // Stops the daemon (its applications see it go) and removes its files.
  void Stop() {
    if (daemon_ == nullptr) return;
    daemon_->Stop();
    thread_.join();
    daemon_.reset();
    std::error_code ec;
    std::filesystem::remove_all(dir_, ec);
  }

  const std::string& socket() const { return socket_; }
  Daemon& daemon() { return *daemon_; }

 private:
  explicit DaemonThread(std::string dir) : dir_(std::move(dir)), socket_(dir_ + "/wharfd.sock") {}

  std::string dir_;
  std::string socket_;
  std::unique_ptr<Daemon> daemon_;
  std::thread thread_;
};

}  // namespace wharf::daemon::testing
