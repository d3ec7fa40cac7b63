// client/testing/server_thread.h: ServerThread, an endpoint driven by a
// thread of its own for the client tests (Run() in short slices until the
// ServerThread is destroyed).
#pragma once

#include <atomic>
#include <chrono>
#include <thread>

#include "wharf/endpoint.h"

namespace wharf::testing {

class ServerThread {
 public:
  explicit ServerThread(Endpoint& ep,
                        std::chrono::nanoseconds period = std::chrono::milliseconds(20))
      : ep_(ep), thread_([this, period] {
          while (!stop_) (void)ep_.Run(period);
        }) {}
  ~ServerThread() {
    stop_ = true;
    ep_.Shutdown();
    thread_.join();
  }
  ServerThread(const ServerThread&) = delete;
  ServerThread& operator=(const ServerThread&) = delete;

 private:
  Endpoint& ep_;
  std::atomic<bool> stop_{false};
  std::thread thread_;
};

}  // namespace wharf::testing
