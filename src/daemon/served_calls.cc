// ServedCalls: serving methods, and the rare ways a request is forgotten.
#include "daemon/served_calls.h"

#include <string>

#include "wharf/endpoint.h"

namespace wharf::daemon {

Status ServedCalls::Serve(uint32_t method, bool served) {
  if (method >= kFirstReservedMethod) {
    return InvalidArgumentError("method " + std::to_string(method) + " is reserved");
  }
  if (!served) {
    methods_.erase(method);
    return OkStatus();
  }
  if (!methods_.contains(method) && methods_.size() >= kMaxMethods) {
    return ResourceExhaustedError("serves " + std::to_string(methods_.size()) +
                                  " methods already (at most " + std::to_string(kMaxMethods) +
                                  ")");
  }
  methods_.insert(method);
  return OkStatus();
}

bool ServedCalls::Forget(const engine::ServerCallRef& ref, uint64_t* handle) {
  auto it = handles_.find(ref);
  if (it == handles_.end()) return false;
  *handle = it->second;
  calls_.erase(it->second);
  handles_.erase(it);
  return true;
}

std::vector<engine::ServerCallRef> ServedCalls::TakeAll() {
  std::vector<engine::ServerCallRef> all;
  all.reserve(calls_.size());
  for (const auto& [handle, ref] : calls_) all.push_back(ref);
  calls_.clear();
  handles_.clear();
  return all;
}

}  // namespace wharf::daemon
