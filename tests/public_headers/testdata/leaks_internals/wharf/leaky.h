// A public header with every fault check_public_headers.sh reports, in its
// order (PublicHeaders.CatchesInternalsInAPublicHeader). Never compiled.
#pragma once

#include <memory>

#include "engine/engine.h"
#include "wharf/status.h"
#include <absl/container/flat_hash_map.h>

namespace wharf {

namespace internal {
class EndpointCore;
struct State;
class PublicAccess;
}  // namespace internal

class Leaky {
 public:
  Leaky() = default;
  explicit Leaky(std::shared_ptr<internal::State> state) : state_(std::move(state)) {}
  const std::shared_ptr<internal::EndpointCore>& core() const { return core_; }

 private:
  friend class internal::PublicAccess;
  Leaky(std::shared_ptr<internal::EndpointCore> core, int n);  // private: allowed
  std::shared_ptr<internal::EndpointCore> core_;
  std::shared_ptr<internal::State> state_;
};

}  // namespace wharf
