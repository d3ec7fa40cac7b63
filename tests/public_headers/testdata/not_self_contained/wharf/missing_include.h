// A public header that is not self-contained: it uses std::vector without
// including <vector> (PublicHeaders.CatchesAHeaderThatIsNotSelfContained).
#pragma once

namespace wharf {

struct Numbers {
  std::vector<int> values;
};

}  // namespace wharf
