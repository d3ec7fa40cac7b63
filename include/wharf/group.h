// wharf/group.h: Group, a fixed set of endpoints (one per process) that can
// wait for each other with Barrier().
#pragma once

#include <chrono>
#include <memory>
#include <string>
#include <vector>

#include "wharf/endpoint.h"

namespace wharf {

// Owned by the application. Member i is the endpoint at members[i]; rank says
// which one this process is. Rank 0 coordinates: the others report to it and
// it releases everyone once all arrived.
class Group {
 public:
  static Result<std::unique_ptr<Group>> Join(Endpoint& endpoint, std::vector<std::string> members,
                                             size_t rank, std::string name = "default");

  size_t size() const { return members_.size(); }
  size_t rank() const { return rank_; }

  // Returns once every member called Barrier() for the same round.
  // kDeadlineExceeded after `timeout`; kUnavailable if the coordinator died.
  Status Barrier(std::chrono::nanoseconds timeout = std::chrono::seconds(30));

 private:
  Group(Endpoint& endpoint, std::vector<std::string> members, size_t rank, std::string name)
      : endpoint_(endpoint), members_(std::move(members)), rank_(rank), name_(std::move(name)) {}

  Endpoint& endpoint_;
  std::vector<std::string> members_;
  size_t rank_;
  std::string name_;
  uint64_t round_ = 0;
};

}  // namespace wharf
