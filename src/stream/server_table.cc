// ServerTable: classification, answers and their byte accounting.
#include "stream/server_table.h"

namespace wharf::stream {

ClientRecord* ServerTable::Find(const transport::NetAddress& client) {
  auto it = clients_.find(client);
  return it == clients_.end() ? nullptr : &it->second;
}

const ClientRecord* ServerTable::Find(const transport::NetAddress& client) const {
  auto it = clients_.find(client);
  return it == clients_.end() ? nullptr : &it->second;
}

ClientRecord& ServerTable::Get(const transport::NetAddress& client) { return clients_[client]; }

ServerTable::Seen ServerTable::Classify(const ClientRecord& record, uint64_t id) {
  if (id < record.floor) return Seen::kBelowFloor;
  auto it = record.rpcs.find(id);
  if (it == record.rpcs.end()) return Seen::kNew;
  return it->second.state == ServedRpc::State::kInProgress ? Seen::kInProgress : Seen::kAnswered;
}

void ServerTable::Start(ClientRecord& record, uint64_t id) {
  auto [it, inserted] = record.rpcs.try_emplace(id);
  if (inserted) {
    ++num_rpcs_;
    ++record.in_progress;
  }
}

ServedRpc& ServerTable::Answer(ClientRecord& record, uint64_t id, Buffer response) {
  ServedRpc& rpc = record.rpcs.at(id);
  if (rpc.state == ServedRpc::State::kInProgress) --record.in_progress;
  rpc.state = ServedRpc::State::kAnswered;
  stored_bytes_ += response.size();
  rpc.response = std::move(response);
  return rpc;
}

void ServerTable::MarkWritten(const transport::NetAddress& client, uint64_t id) {
  ClientRecord* record = Find(client);
  if (record == nullptr) return;
  auto it = record->rpcs.find(id);
  if (it == record->rpcs.end()) return;
  ServedRpc& rpc = it->second;
  if (rpc.written_seq != 0 || rpc.lost || rpc.state != ServedRpc::State::kAnswered) return;
  rpc.written_seq = next_seq_++;
  written_.emplace(rpc.written_seq, std::make_pair(client, id));
}

void ServerTable::Unmark(ServedRpc& rpc) {
  if (rpc.written_seq != 0) written_.erase(rpc.written_seq);
  rpc.written_seq = 0;
}

void ServerTable::Forget(ServedRpc& rpc) {
  if (rpc.written_seq != 0) written_.erase(rpc.written_seq);
  rpc.written_seq = 0;
  stored_bytes_ -= rpc.response.size();
  --num_rpcs_;
}

}  // namespace wharf::stream
