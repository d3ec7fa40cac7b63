// transport/fake/packet_log.h: PacketLog, the record of every packet the fake
// network put on the wire, rendered as text that scenario tests compare:
//
//   "A->B DATA 1400@0; B->A GRANT 10000 [dropped]; A->B DATA 1400@1400 [dup]"
//
// One entry per copy on the wire, in send order (a duplicate copy is its own
// entry right after the original). An entry's fate is filled in when it is
// known: losses decided at send time immediately, losses at arrival (the path
// was partitioned meanwhile, the receiver detached) when the packet arrives.
// A packet still in flight renders as if delivered.
//
// This file holds the log only; FakeNetwork decides what happens to packets.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "transport/fake/packet_predicate.h"

namespace wharf::transport::fake {

// Why a copy did not reach its receiver.
enum class PacketLoss : uint8_t {
  kNone,         // delivered, or still in flight
  kDropped,      // random or scripted drop                      -> " [dropped]"
  kPartitioned,  // sender and receiver were partitioned         -> " [partitioned]"
  kNoRoute,      // no endpoint at the destination address       -> " [no route]"
};

struct LogEntry {
  std::string src_host;
  // The receiving host's name, or the destination address as text when no
  // endpoint was attached there at send time.
  std::string dst_host;
  std::string description;
  // This copy is the extra one made by duplication -> " [dup]" (unless lost).
  bool duplicate = false;
  // Held back by a reorder or scripted delay -> " [delayed]" (unless lost or
  // a duplicate).
  bool delayed = false;
  PacketLoss loss = PacketLoss::kNone;

  // "<src>-><dst> <description>" plus at most one fate tag, the most telling:
  // a loss, else [dup], else [delayed].
  std::string ToString() const;
};

// Owned by FakeNetwork. Single-threaded.
class PacketLog {
 public:
  // Identifies an entry for later fate updates; kNotLogged for packets the
  // filter rejected.
  using EntryId = uint64_t;
  static constexpr EntryId kNotLogged = 0;

  // Only packets matching `filter` are recorded from now on; an empty
  // function records everything (the default). Entries already recorded stay.
  void SetFilter(PacketPredicate filter) { filter_ = std::move(filter); }

  // Appends `entry` if the filter accepts it; returns its id or kNotLogged.
  EntryId Record(LogEntry entry);

  // The entry with `id`, or nullptr when it was never logged or was cleared.
  // Valid until the next Record or Clear.
  LogEntry* Find(EntryId id);

  // One string per entry, oldest first.
  std::vector<std::string> Lines() const;
  // The lines joined with `separator`.
  std::string Render(std::string_view separator) const;

  // Forgets all entries; ids already handed out then find nothing.
  void Clear();
  size_t size() const { return entries_.size(); }

 private:
  PacketPredicate filter_;
  // entries_[i] has id first_id_ + i.
  std::vector<LogEntry> entries_;
  EntryId first_id_ = 1;
};

}  // namespace wharf::transport::fake
