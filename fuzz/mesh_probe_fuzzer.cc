// Decodes arbitrary bytes as a mesh probe and as an answer: no crash, and
// whatever decodes encodes back to the same fields (an answer to the same
// bytes but its version, which the encoder writes as this build's).
#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <span>
#include <vector>

#include "wire/mesh_probe.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  std::span<const std::byte> in(reinterpret_cast<const std::byte*>(data), size);
  if (auto probe = wharf::wire::DecodeMeshProbe(in); probe.ok()) {
    std::vector<std::byte> again(size);
    if (!wharf::wire::EncodeMeshProbe(*probe, again).ok()) std::abort();
    auto back = wharf::wire::DecodeMeshProbe(again);
    if (!back.ok() || back->sequence != probe->sequence || back->epoch != probe->epoch ||
        back->sent_ns != probe->sent_ns || back->answer_priority != probe->answer_priority) {
      std::abort();
    }
  }
  if (auto answer = wharf::wire::DecodeMeshAnswer(in); answer.ok()) {
    std::vector<std::byte> again(wharf::wire::kMeshAnswerBytes);
    if (!wharf::wire::EncodeMeshAnswer(*answer, again).ok()) std::abort();
    std::vector<std::byte> read(in.begin(), in.end());
    read[4] = std::byte{wharf::wire::kMeshProbeVersion};  // version 1 is read too
    if (read != again) std::abort();
  }
  return 0;
}
