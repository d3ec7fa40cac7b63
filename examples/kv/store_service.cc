// StoreService: the kv store's handlers.
#include "store_service.h"

namespace wharf::examples::kv {

std::string Quoted(std::string_view key) {
  constexpr size_t kShown = 40;
  if (key.size() <= kShown) return "'" + std::string(key) + "'";
  return "'" + std::string(key.substr(0, kShown)) + "...' (" + std::to_string(key.size()) +
         " bytes)";
}

Status StoreService::CheckKey(const std::string& key) const {
  if (key.empty()) return InvalidArgumentError("an empty key");
  if (key.size() > limits_.max_key_bytes) {
    return InvalidArgumentError("key " + Quoted(key) + " is over the limit of " +
                                std::to_string(limits_.max_key_bytes) + " bytes");
  }
  return OkStatus();
}

Result<GetReply> StoreService::Get(const rpc::ServerContext&, const GetRequest& request) {
  std::lock_guard lock(mu_);
  auto it = entries_.find(request.key());
  if (it == entries_.end()) return NotFoundError("no key " + Quoted(request.key()));
  GetReply reply;
  reply.set_value(it->second.bytes);
  reply.set_version(it->second.version);
  return reply;
}

Result<PutReply> StoreService::Put(const rpc::ServerContext&, const PutRequest& request) {
  if (Status s = CheckKey(request.key()); !s.ok()) return s;
  if (request.value().size() > limits_.max_value_bytes) {
    return InvalidArgumentError("key " + Quoted(request.key()) + ": a value of " +
                                std::to_string(request.value().size()) +
                                " bytes is over the limit of " +
                                std::to_string(limits_.max_value_bytes) + " bytes");
  }
  PutReply reply;
  {
    std::lock_guard lock(mu_);
    auto it = entries_.find(request.key());
    const bool created = it == entries_.end();
    if (created && entries_.size() >= limits_.max_keys) {
      return ResourceExhaustedError("key " + Quoted(request.key()) + ": the store is full (" +
                                    std::to_string(limits_.max_keys) + " keys)");
    }
    if (created) it = entries_.emplace(request.key(), Value{}).first;
    it->second.bytes = request.value();
    it->second.version = ++last_version_;
    reply.set_version(it->second.version);
    reply.set_created(created);
  }
  Notify(request.key());
  return reply;
}

Result<DeleteReply> StoreService::Delete(const rpc::ServerContext&, const DeleteRequest& request) {
  DeleteReply reply;
  {
    std::lock_guard lock(mu_);
    reply.set_found(entries_.erase(request.key()) > 0);
  }
  if (reply.found()) Notify(request.key());
  return reply;
}

void StoreService::Scan(const ScanRequest& request, rpc::ServerStreamPtr<ScanRequest, Entry> stream) {
  std::vector<Entry> found;
  {
    std::lock_guard lock(mu_);
    for (auto it = entries_.lower_bound(request.prefix());
         it != entries_.end() && it->first.starts_with(request.prefix()); ++it) {
      if (request.limit() != 0 && found.size() >= request.limit()) break;
      Entry& entry = found.emplace_back();
      entry.set_key(it->first);
      entry.set_value(it->second.bytes);
      entry.set_version(it->second.version);
    }
  }
  // Written at once: the stream holds back what the client has not read.
  for (const Entry& entry : found) {
    if (!stream->Write(entry).ok()) return;  // the client went away
  }
  stream->Finish().IgnoreError();
}

Event StoreService::EventOf(const std::string& key) const {
  Event event;
  event.set_key(key);
  auto it = entries_.find(key);
  if (it == entries_.end()) {
    event.set_deleted(true);
  } else {
    event.set_value(it->second.bytes);
    event.set_version(it->second.version);
  }
  return event;
}

void StoreService::Watch(WatchStream stream) {
  uint64_t id = 0;
  {
    std::lock_guard lock(mu_);
    if (watchers_.size() < limits_.max_watches) {
      id = next_watch_++;
      watchers_[id] = Watcher{stream, {}};
    }
  }
  if (id == 0) {
    stream->Finish(ResourceExhaustedError("the store has " + std::to_string(limits_.max_watches) +
                                          " watches open already"))
        .IgnoreError();
    return;
  }
  stream->OnRead([this, id](Result<std::optional<WatchRequest>> read) {
    OnWatchRead(id, std::move(read));
  });
}

void StoreService::OnWatchRead(uint64_t id, Result<std::optional<WatchRequest>> read) {
  WatchStream stream;
  Status refusal;
  Event now;
  {
    std::lock_guard lock(mu_);
    auto it = watchers_.find(id);
    if (it == watchers_.end()) return;
    stream = it->second.stream;
    if (!read.ok() || !read->has_value()) {
      // Cancelled, gone, malformed (finished already), or done watching.
      watchers_.erase(it);
    } else if (Status s = CheckKey((*read)->key()); !s.ok()) {
      refusal = s;
      watchers_.erase(it);
    } else if (it->second.keys.size() >= limits_.max_keys_per_watch &&
               !it->second.keys.contains((*read)->key())) {
      refusal = ResourceExhaustedError("a watch follows at most " +
                                       std::to_string(limits_.max_keys_per_watch) + " keys");
      watchers_.erase(it);
    } else {
      it->second.keys.insert((*read)->key());
      now = EventOf((*read)->key());
    }
  }
  if (!read.ok()) return;
  if (!read->has_value()) {
    stream->Finish().IgnoreError();
  } else if (!refusal.ok()) {
    stream->Finish(refusal).IgnoreError();
  } else {
    stream->Write(now).IgnoreError();  // fails only once the client is gone
  }
}

void StoreService::Notify(const std::string& key) {
  std::vector<std::pair<WatchStream, Event>> events;
  {
    std::lock_guard lock(mu_);
    for (auto& [id, watcher] : watchers_) {
      if (watcher.keys.contains(key)) events.emplace_back(watcher.stream, EventOf(key));
    }
  }
  for (auto& [stream, event] : events) stream->Write(event).IgnoreError();
}

size_t StoreService::watches() const {
  std::lock_guard lock(mu_);
  return watchers_.size();
}

}  // namespace wharf::examples::kv
