// transport/fake/faults.h: the two sources of packet faults on the fake
// network, both deterministic:
//
//  - FaultDice: random drop / duplicate / reorder, drawn from a PRNG seeded by
//    the test, so the same seed and the same traffic give the same faults.
//  - FaultScript: one-shot faults a scenario test aims at a packet it can
//    name ("drop the first GRANT from B to A").
//
// Partitions are not here (they are a property of the host pair, kept by
// FakeNetwork); neither are timing or the log.
#pragma once

#include <cstdint>
#include <random>
#include <string_view>
#include <vector>

#include "base/clock.h"
#include "transport/fake/link_model.h"
#include "transport/fake/packet_predicate.h"

namespace wharf::transport::fake {

// What happens to one packet beyond plain delivery.
struct FaultDecision {
  bool drop = false;
  bool duplicate = false;
  // Held back after leaving the link by extra_delay_ns (> 0 when delayed).
  bool delayed = false;
  DurationNs extra_delay_ns = 0;
};

// Owned by FakeNetwork. Single-threaded.
class FaultDice {
 public:
  explicit FaultDice(uint64_t seed) : rng_(seed) {}

  // Rolls the random faults of `config` for one packet. Always consumes
  // exactly three draws (drop, duplicate, reorder), whatever the
  // probabilities, so that changing one probability does not reshuffle the
  // others' outcomes for the same seed.
  FaultDecision Roll(const LinkConfig& config);

 private:
  // Uniform in [0, 1) from the top 53 bits of one draw. Done by hand because
  // std::uniform_real_distribution's output differs between standard
  // libraries, and logs must be identical under g++ and clang.
  double Uniform() { return static_cast<double>(rng_() >> 11) * 0x1.0p-53; }

  // std::mt19937_64's sequence is fixed by the standard for a given seed.
  std::mt19937_64 rng_;
};

// Owned by FakeNetwork. Single-threaded.
class FaultScript {
 public:
  // Each call arms one fault for the first later packet `match` accepts; the
  // fault then disarms. Several armed faults of one kind fire on successive
  // matching packets, in the order armed.
  void DropNext(PacketPredicate match);
  void DuplicateNext(PacketPredicate match);
  void DelayNext(PacketPredicate match, DurationNs extra_ns);

  // Applies the armed faults to one packet that made it past partitions.
  // `random_drop` says the dice already lost it. A matching armed drop fires
  // either way (the packet matched, so the fault is spent). A lost packet
  // cannot also be duplicated or delayed, so when it is dropped (by script or
  // dice) duplicate and delay faults stay armed for the next match; otherwise
  // the first matching duplicate and the first matching delay each fire.
  FaultDecision Apply(std::string_view src_host, std::string_view dst_host,
                      std::string_view description, bool random_drop);

  // Number of armed faults that have not fired yet.
  size_t pending() const { return armed_.size(); }
  void Clear() { armed_.clear(); }

 private:
  enum class Kind : uint8_t { kDrop, kDuplicate, kDelay };
  struct Armed {
    Kind kind;
    PacketPredicate match;
    DurationNs extra_ns;  // kDelay only
  };

  // Index of the first armed fault of `kind` matching the packet, or -1.
  int FindFirst(Kind kind, std::string_view src_host, std::string_view dst_host,
                std::string_view description) const;

  // In the order armed.
  std::vector<Armed> armed_;
};

}  // namespace wharf::transport::fake
