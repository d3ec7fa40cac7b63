// PacketLog: recording packets and rendering them as scenario text.
#include "transport/fake/packet_log.h"

#include <utility>

namespace wharf::transport::fake {

std::string LogEntry::ToString() const {
  std::string line = src_host + "->" + dst_host + " " + description;
  switch (loss) {
    case PacketLoss::kDropped:
      return line + " [dropped]";
    case PacketLoss::kPartitioned:
      return line + " [partitioned]";
    case PacketLoss::kNoRoute:
      return line + " [no route]";
    case PacketLoss::kNone:
      break;
  }
  if (duplicate) return line + " [dup]";
  if (delayed) return line + " [delayed]";
  return line;
}

PacketLog::EntryId PacketLog::Record(LogEntry entry) {
  if (filter_ && !filter_(entry.src_host, entry.dst_host, entry.description)) return kNotLogged;
  entries_.push_back(std::move(entry));
  return first_id_ + entries_.size() - 1;
}

LogEntry* PacketLog::Find(EntryId id) {
  if (id == kNotLogged || id < first_id_ || id - first_id_ >= entries_.size()) return nullptr;
  return &entries_[id - first_id_];
}

std::vector<std::string> PacketLog::Lines() const {
  std::vector<std::string> lines;
  lines.reserve(entries_.size());
  for (const LogEntry& e : entries_) lines.push_back(e.ToString());
  return lines;
}

std::string PacketLog::Render(std::string_view separator) const {
  std::string out;
  for (size_t i = 0; i < entries_.size(); ++i) {
    if (i > 0) out.append(separator);
    out += entries_[i].ToString();
  }
  return out;
}

void PacketLog::Clear() {
  // Ids keep increasing across clears so that an in-flight packet's stale id
  // can never name a newer entry.
  first_id_ += entries_.size();
  entries_.clear();
}

}  // namespace wharf::transport::fake
