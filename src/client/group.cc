// Group: barrier rounds coordinated by rank 0 (engine/barrier_rounds.h).
#include "wharf/group.h"

#include "client/endpoint_core.h"
#include "client/public_access.h"
#include "engine/uri.h"

namespace wharf {
namespace {

// FNV-1a: the group name on the wire, so that several groups can share a
// coordinator endpoint.
uint64_t HashName(const std::string& name) {
  uint64_t h = 1469598103934665603ULL;
  for (unsigned char c : name) h = (h ^ c) * 1099511628211ULL;
  return h;
}

}  // namespace

Result<std::unique_ptr<Group>> Group::Join(Endpoint& endpoint, std::vector<std::string> members,
                                           size_t rank, std::string name) {
  if (members.empty()) return InvalidArgumentError("group '" + name + "': no members");
  if (rank >= members.size()) {
    return InvalidArgumentError("group '" + name + "': rank " + std::to_string(rank) +
                                " is outside 0.." + std::to_string(members.size() - 1));
  }
  if (members.size() > UINT32_MAX) return InvalidArgumentError("group: too many members");
  WHARF_RETURN_IF_ERROR(internal::PublicAccess::Core(endpoint)
                            ->Resolve(members[0])
                            .status()
                            .WithContext("group '" + name + "': coordinator (rank 0)"));
  return std::unique_ptr<Group>(new Group(endpoint, std::move(members), rank, std::move(name)));
}

Status Group::Barrier(std::chrono::nanoseconds timeout) {
  auto& core = *internal::PublicAccess::Core(endpoint_);
  WHARF_ASSIGN_OR_RETURN(engine::Uri coordinator, core.Resolve(members_[0]));
  TimeNs deadline = core.DeadlineAfter(timeout);
  uint64_t round = round_++;
  auto state = core.Start([&](engine::EngineApi& e, uint64_t op) {
    e.BarrierArrive(op, coordinator, rank_ == 0, HashName(name_), round,
                    static_cast<uint32_t>(members_.size()), deadline);
  });
  return core.Await(*state, kNever).WithContext("group '" + name_ + "' barrier round " +
                                                std::to_string(round));
}

}  // namespace wharf
