// MeshResponder: probe in, answer out.
#include "mesh/probe_responder.h"

#include <algorithm>

#include "wire/mesh_probe.h"

namespace wharf::mesh {

Result<ProbeAnswer> MeshResponder::Answer(std::span<const std::byte> request, TimeNs arrived_ns,
                                     TimeNs now) {
  Result<wire::MeshProbe> probe = wire::DecodeMeshProbe(request);
  if (!probe.ok()) {
    ++counters_.malformed;
    return probe.status();
  }
  Buffer answer = Buffer::Allocate(wire::kMeshAnswerBytes);
  const wire::MeshAnswer out{.epoch = probe->epoch,
                             .sequence = probe->sequence,
                             .sent_ns = probe->sent_ns,
                             .dwell_ns = static_cast<uint64_t>(std::max<TimeNs>(0, now - arrived_ns)),
                             .dwell_source = wire::TimestampSource::kMonotonic};
  (void)wire::EncodeMeshAnswer(out, answer.span());
  ++counters_.answered;
  return ProbeAnswer{.message = std::move(answer), .priority = probe->answer_priority};
}

}  // namespace wharf::mesh
