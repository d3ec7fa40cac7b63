// PassiveSeries and PassiveBook: batches in, idle peers out.
#include "mesh/passive_book.h"

#include <utility>

namespace wharf::mesh {

void PassiveSeries::Add(TimeNs now, const CompactHistogram& round_trips, uint64_t failures) {
  rtt_.RecordMany(now, round_trips, failures);
  rtt_buckets_.RecordAll(round_trips);
  round_trips_ += round_trips.Count();
  failures_ += failures;
  last_ns_ = now;
}

std::string PassiveBook::KeyOf(std::string_view transport, const transport::NetAddress& peer) {
  std::string key(transport);
  key += "://";
  key += peer.ToString();
  return key;
}

void PassiveBook::Add(TimeNs now, std::string_view transport, const transport::NetAddress& peer,
                      const CompactHistogram& round_trips, uint64_t failures) {
  const std::string key = KeyOf(transport, peer);
  auto it = index_.find(key);
  if (it == index_.end()) {
    if (series_.size() >= options_.max_peers) {
      ++counters_.untracked;
      return;
    }
    it = index_.emplace(key, series_.size()).first;
    series_.push_back(std::make_unique<PassiveSeries>(std::string(transport), peer, now));
  }
  series_[it->second]->Add(now, round_trips, failures);
}

void PassiveBook::ForgetIdle(TimeNs now) {
  for (size_t i = 0; i < series_.size();) {
    if (now - series_[i]->last_ns() <= options_.idle_timeout_ns) {
      ++i;
      continue;
    }
    ++counters_.evicted;
    index_.erase(KeyOf(series_[i]->transport(), series_[i]->peer()));
    if (i + 1 != series_.size()) {
      series_[i] = std::move(series_.back());
      index_[KeyOf(series_[i]->transport(), series_[i]->peer())] = i;
    }
    series_.pop_back();
  }
}

std::optional<size_t> PassiveBook::IndexOf(std::string_view transport,
                                           const transport::NetAddress& peer) const {
  auto it = index_.find(KeyOf(transport, peer));
  if (it == index_.end()) return std::nullopt;
  return it->second;
}

const PassiveSeries* PassiveBook::Find(std::string_view transport,
                                       const transport::NetAddress& peer) const {
  const std::optional<size_t> i = IndexOf(transport, peer);
  return i.has_value() ? series_[*i].get() : nullptr;
}

}  // namespace wharf::mesh
