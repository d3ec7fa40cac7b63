// examples/kv/store_service.h: StoreService, the kv server: the generated
// Store::Service with its methods over an in-memory map, within limits.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "kv.wharf.h"
#include "wharf/rpc_stream.h"

namespace wharf::examples::kv {

// What the server holds at most.
struct Limits {
  size_t max_keys = 100'000;
  size_t max_key_bytes = 1024;
  size_t max_value_bytes = size_t{1} << 20;
  size_t max_watches = 1024;           // Watch streams open at once
  size_t max_keys_per_watch = 1024;    // keys one Watch follows
};

// "'greeting'", or "'<long key>...'" cut at 40 bytes: keys in messages.
std::string Quoted(std::string_view key);

// Unary handlers run one at a time, but stream callbacks may run beside
// them (on the thread driving the endpoint while a handler runs), so the
// state has a lock. Streams are written outside it: a write may run stream
// callbacks, which take it. Must outlive the endpoint it is registered on.
class StoreService final : public Store::Service {
 public:
  explicit StoreService(Limits limits) : limits_(limits) {}

  Result<GetReply> Get(const rpc::ServerContext&, const GetRequest& request) override;
  Result<PutReply> Put(const rpc::ServerContext&, const PutRequest& request) override;
  Result<DeleteReply> Delete(const rpc::ServerContext&, const DeleteRequest& request) override;
  void Scan(const ScanRequest& request, rpc::ServerStreamPtr<ScanRequest, Entry> stream) override;
  void Watch(rpc::ServerStreamPtr<WatchRequest, Event> stream) override;

  size_t watches() const;

 private:
  struct Value {
    std::string bytes;
    uint64_t version = 0;
  };
  using WatchStream = rpc::ServerStreamPtr<WatchRequest, Event>;
  struct Watcher {
    WatchStream stream;
    std::set<std::string> keys;
  };

  Status CheckKey(const std::string& key) const;
  // The key's state as an event (under mu_).
  Event EventOf(const std::string& key) const;
  // Tells the watchers of `key` its new state (takes mu_, writes outside).
  void Notify(const std::string& key);
  // One WatchRequest (or the end) on watch `id`.
  void OnWatchRead(uint64_t id, Result<std::optional<WatchRequest>> read);

  const Limits limits_;
  mutable std::mutex mu_;
  std::map<std::string, Value> entries_;
  // Versions come from one counter for the whole store: each Put takes the next.
  uint64_t last_version_ = 0;
  std::map<uint64_t, Watcher> watchers_;
  uint64_t next_watch_ = 1;
};

}  // namespace wharf::examples::kv
