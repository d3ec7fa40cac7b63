// ServedCalls: serving methods, and the rare ways a request is forgotten.
#include "daemon/served_calls.h"

#include <string>
#include <string_view>
#include <unordered_set>

#include "engine/frame.h"
#include "wharf/endpoint.h"

namespace wharf::daemon {

namespace {

Status ServeIn(std::unordered_set<uint32_t>& methods, uint32_t method, bool served,
               std::string_view what) {
  // Calls with metadata arrive there: the library unwraps them.
  if (method >= kFirstReservedMethod && method != engine::kCallWithMetadataMethod) {
    return InvalidArgumentError("method " + std::to_string(method) + " is reserved");
  }
  if (!served) {
    methods.erase(method);
    return OkStatus();
  }
  if (!methods.contains(method) && methods.size() >= ServedCalls::kMaxMethods) {
    return ResourceExhaustedError("serves " + std::to_string(methods.size()) + " " +
                                  std::string(what) + " already (at most " +
                                  std::to_string(ServedCalls::kMaxMethods) + ")");
  }
  methods.insert(method);
  return OkStatus();
}

}  // namespace

Status ServedCalls::Serve(uint32_t method, bool served) {
  return ServeIn(methods_, method, served, "methods");
}

Status ServedCalls::ServeStreams(uint32_t method, bool served) {
  // 0 on a connect means a plain connection.
  if (method == 0) return InvalidArgumentError("stream method 0 is reserved");
  return ServeIn(stream_methods_, method, served, "stream methods");
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
