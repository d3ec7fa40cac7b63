// FaultDice and FaultScript: deciding random and scripted packet faults.
#include "transport/fake/faults.h"

#include <utility>

namespace wharf::transport::fake {

FaultDecision FaultDice::Roll(const LinkConfig& config) {
  double drop_draw = Uniform();
  double duplicate_draw = Uniform();
  double reorder_draw = Uniform();
  FaultDecision d;
  d.drop = drop_draw < config.drop_probability;
  d.duplicate = duplicate_draw < config.duplicate_probability;
  if (reorder_draw < config.reorder_probability && config.reorder_extra_delay_ns > 0) {
    d.delayed = true;
    d.extra_delay_ns = config.reorder_extra_delay_ns;
  }
  return d;
}

void FaultScript::DropNext(PacketPredicate match) {
  armed_.push_back({Kind::kDrop, std::move(match), 0});
}

void FaultScript::DuplicateNext(PacketPredicate match) {
  armed_.push_back({Kind::kDuplicate, std::move(match), 0});
}

void FaultScript::DelayNext(PacketPredicate match, DurationNs extra_ns) {
  armed_.push_back({Kind::kDelay, std::move(match), extra_ns});
}

int FaultScript::FindFirst(Kind kind, std::string_view src_host, std::string_view dst_host,
                           std::string_view description) const {
  for (size_t i = 0; i < armed_.size(); ++i) {
    const Armed& a = armed_[i];
    if (a.kind == kind && (!a.match || a.match(src_host, dst_host, description))) {
      return static_cast<int>(i);
    }
  }
  return -1;
}

FaultDecision FaultScript::Apply(std::string_view src_host, std::string_view dst_host,
                                 std::string_view description, bool random_drop) {
  FaultDecision d;
  d.drop = random_drop;
  if (armed_.empty()) return d;
  if (int i = FindFirst(Kind::kDrop, src_host, dst_host, description); i >= 0) {
    armed_.erase(armed_.begin() + i);
    d.drop = true;
  }
  if (d.drop) return d;
  if (int i = FindFirst(Kind::kDuplicate, src_host, dst_host, description); i >= 0) {
    armed_.erase(armed_.begin() + i);
    d.duplicate = true;
  }
  if (int i = FindFirst(Kind::kDelay, src_host, dst_host, description); i >= 0) {
    d.delayed = true;
    d.extra_delay_ns = armed_[i].extra_ns;
    armed_.erase(armed_.begin() + i);
  }
  return d;
}

}  // namespace wharf::transport::fake
