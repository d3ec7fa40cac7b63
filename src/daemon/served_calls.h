// daemon/served_calls.h: ServedCalls, what one application serves as
// wharfd sees it: the methods it serves (kServe) and the requests for them
// handed to it and awaiting its answer, by the handle it was given. It holds
// neither the engine's side of a request (the engine answers it, by its
// ServerCallRef) nor the entries that carry requests to the application
// (CompletionOutbox).
//
// Owned by the AppSession; single-threaded: the daemon's loop thread.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <unordered_set>
#include <vector>

#include "absl/container/flat_hash_map.h"

#include "engine/engine_sink.h"
#include "wharf/status.h"

namespace wharf::daemon {

class ServedCalls {
 public:
  // Methods one application may serve at once: the engine keeps a table of
  // them, and every table fed by an application has a cap.
  static constexpr size_t kMaxMethods = 1024;

  // Starts (`served`) or stops serving `method`; the caller tells the
  // engine when this succeeds. kInvalidArgument for a reserved method,
  // kResourceExhausted for a new one past kMaxMethods.
  Status Serve(uint32_t method, bool served);
  // The same for streams of `method` (their own table, the same cap).
  Status ServeStreams(uint32_t method, bool served);
  bool serves(uint32_t method) const { return methods_.contains(method); }
  size_t methods() const { return methods_.size(); }

  // A request handed to the application: its handle (never reused).
  uint64_t Add(const engine::ServerCallRef& ref) {
    const uint64_t handle = next_handle_++;
    calls_.emplace(handle, ref);
    handles_.emplace(ref, handle);
    return handle;
  }
  // The request `handle` names, forgotten now (it is being answered or
  // refused); none if it does not await an answer.
  std::optional<engine::ServerCallRef> Take(uint64_t handle) {
    auto it = calls_.find(handle);
    if (it == calls_.end()) return std::nullopt;
    const engine::ServerCallRef ref = it->second;
    calls_.erase(it);
    handles_.erase(ref);
    return ref;
  }
  // The client withdrew request `ref`: forgotten now; false if it was not
  // awaiting an answer, else its handle in `*handle`.
  bool Forget(const engine::ServerCallRef& ref, uint64_t* handle);
  // Whether request `handle` awaits the application's answer.
  bool awaits(uint64_t handle) const { return calls_.contains(handle); }
  // Whether `handle` was handed out (it may be forgotten since).
  bool HandedOut(uint64_t handle) const { return handle != 0 && handle < next_handle_; }
  // Every request awaiting an answer, forgotten now (the application went).
  std::vector<engine::ServerCallRef> TakeAll();

  // Requests awaiting the application's answer.
  size_t size() const { return calls_.size(); }
  bool empty() const { return calls_.empty(); }

 private:
  std::unordered_set<uint32_t> methods_;  // served, at most kMaxMethods
  std::unordered_set<uint32_t> stream_methods_;  // streams served, at most kMaxMethods
  // The requests awaiting an answer, both ways (open addressing: an insert
  // and an erase each per request).
  absl::flat_hash_map<uint64_t, engine::ServerCallRef> calls_;
  absl::flat_hash_map<engine::ServerCallRef, uint64_t, engine::ServerCallRefHash> handles_;
  uint64_t next_handle_ = 1;
};

}  // namespace wharf::daemon
