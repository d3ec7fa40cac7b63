// netns/thread_netns.h: moves the calling thread into a named network
// namespace for a scope, so that an in-process wharf Endpoint opened there
// has its sockets on a cluster host (a socket belongs to the namespace of
// the thread that created it, for its whole life):
//
//   auto inside = ThreadNetns::Enter(cluster->namespace_name(0));
//   auto client = wharf::Endpoint::Open({.address = "homa://198.18.7.1:0"});
//
// Only this thread moves; threads it starts meanwhile start inside too.
// Holds no process or cluster management (subprocess.h, netns_cluster.h).
#pragma once

#include <memory>
#include <string>

#include "wharf/result.h"

namespace wharf::netns {

// Owned by the test; must be destroyed on the thread that entered (it
// moves that thread back to the namespace it came from). Not movable.
class ThreadNetns {
 public:
  // Enters /var/run/netns/<name>. kNotFound for an unknown name; the errno
  // of setns otherwise (kPermissionDenied without CAP_SYS_ADMIN).
  static Result<std::unique_ptr<ThreadNetns>> Enter(const std::string& name);

  // Returns the thread to its original namespace; a failure there would
  // leave the thread in the wrong network, so it aborts the test binary.
  ~ThreadNetns();
  ThreadNetns(const ThreadNetns&) = delete;
  ThreadNetns& operator=(const ThreadNetns&) = delete;

 private:
  explicit ThreadNetns(int original_fd) : original_fd_(original_fd) {}
  // The thread's namespace before Enter (an fd of /proc/thread-self/ns/net).
  int original_fd_;
};

}  // namespace wharf::netns
