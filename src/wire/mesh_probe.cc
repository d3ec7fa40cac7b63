// The mesh probe's request and answer: encode and decode.
#include "wire/mesh_probe.h"

#include <algorithm>
#include <string>

#include "wire/byte_order.h"

namespace wharf::wire {
namespace {

constexpr uint8_t kKindProbe = 1;
constexpr uint8_t kKindAnswer = 2;

// `flags` is the u16 at offset 6: a probe's answer_priority byte and the
// reserved one, an answer's reserved bytes.
void EncodeHeader(uint8_t kind, uint16_t flags, uint64_t epoch, uint64_t sequence,
                  uint64_t sent_ns, std::byte* p) {
  StoreU32(p, kMeshProbeMagic);
  StoreU8(p + 4, kMeshProbeVersion);
  StoreU8(p + 5, kind);
  StoreU16(p + 6, flags);
  StoreU64(p + 8, epoch);
  StoreU64(p + 16, sequence);
  StoreU64(p + 24, sent_ns);
}

// Checks the fixed part both messages share, but for the u16 at offset 6
// (which DecodeMeshProbe reads: zero in answers and version-1 probes);
// `what` names the message in errors.
Status CheckHeader(std::span<const std::byte> in, uint8_t kind, const char* what) {
  if (in.size() < kMeshProbeHeaderBytes) {
    return InvalidArgumentError(std::string("mesh ") + what + ": " + std::to_string(in.size()) +
                                " bytes, shorter than its " +
                                std::to_string(kMeshProbeHeaderBytes) + "-byte header");
  }
  const std::byte* p = in.data();
  if (LoadU32(p) != kMeshProbeMagic) {
    return InvalidArgumentError(std::string("mesh ") + what + ": bad magic (not a wharf probe)");
  }
  const uint8_t version = LoadU8(p + 4);
  if (version < kOldestMeshProbeVersion || version > kMeshProbeVersion) {
    return InvalidArgumentError(std::string("mesh ") + what + ": version " +
                                std::to_string(version) + ", this build speaks " +
                                std::to_string(kOldestMeshProbeVersion) + " to " +
                                std::to_string(kMeshProbeVersion));
  }
  if (LoadU8(p + 5) != kind) {
    return InvalidArgumentError(std::string("mesh ") + what + ": kind " +
                                std::to_string(LoadU8(p + 5)) + ", expected " +
                                std::to_string(kind));
  }
  const bool has_answer_priority = kind == kKindProbe && version >= 2;
  if (has_answer_priority ? LoadU8(p + 7) != 0 : LoadU16(p + 6) != 0) {
    return InvalidArgumentError(std::string("mesh ") + what + ": reserved bytes are not zero");
  }
  return OkStatus();
}

}  // namespace

Status EncodeMeshProbe(const MeshProbe& probe, std::span<std::byte> out) {
  if (out.size() < kMeshProbeHeaderBytes || out.size() > kMaxProbeBytes) {
    return InvalidArgumentError("mesh probe: size " + std::to_string(out.size()) +
                                " is outside " + std::to_string(kMeshProbeHeaderBytes) + ".." +
                                std::to_string(kMaxProbeBytes));
  }
  if (probe.answer_priority < kAnswerPriorityBySize ||
      probe.answer_priority > kMaxAnswerPriority) {
    return InvalidArgumentError("mesh probe: answer priority " +
                                std::to_string(probe.answer_priority) + " is outside 0..7");
  }
  const auto priority_byte = static_cast<uint16_t>(probe.answer_priority + 1);
  EncodeHeader(kKindProbe, static_cast<uint16_t>(priority_byte << 8), probe.epoch,
               probe.sequence, probe.sent_ns, out.data());
  std::fill(out.begin() + kMeshProbeHeaderBytes, out.end(), std::byte{0});
  return OkStatus();
}

Result<MeshProbe> DecodeMeshProbe(std::span<const std::byte> in) {
  WHARF_RETURN_IF_ERROR(CheckHeader(in, kKindProbe, "probe"));
  if (in.size() > kMaxProbeBytes) {
    return InvalidArgumentError("mesh probe: " + std::to_string(in.size()) +
                                " bytes, over the limit of " + std::to_string(kMaxProbeBytes));
  }
  const std::byte* p = in.data();
  const uint8_t priority_byte = LoadU8(p + 6);  // zero in version 1
  if (priority_byte > kMaxAnswerPriority + 1) {
    return InvalidArgumentError("mesh probe: answer priority byte " +
                                std::to_string(priority_byte) + ", expected 0 to " +
                                std::to_string(kMaxAnswerPriority + 1));
  }
  return MeshProbe{.epoch = LoadU64(p + 8),
                   .sequence = LoadU64(p + 16),
                   .sent_ns = LoadU64(p + 24),
                   .answer_priority = static_cast<int8_t>(priority_byte - 1)};
}

Status EncodeMeshAnswer(const MeshAnswer& answer, std::span<std::byte> out) {
  if (out.size() < kMeshAnswerBytes) {
    return InvalidArgumentError("mesh answer: room for " + std::to_string(out.size()) +
                                " bytes, needs " + std::to_string(kMeshAnswerBytes));
  }
  std::byte* p = out.data();
  EncodeHeader(kKindAnswer, 0, answer.epoch, answer.sequence, answer.sent_ns, p);
  StoreU64(p + 32, answer.dwell_ns);
  StoreU8(p + 40, static_cast<uint8_t>(answer.dwell_source));
  std::fill(p + 41, p + kMeshAnswerBytes, std::byte{0});
  return OkStatus();
}

Result<MeshAnswer> DecodeMeshAnswer(std::span<const std::byte> in) {
  WHARF_RETURN_IF_ERROR(CheckHeader(in, kKindAnswer, "answer"));
  if (in.size() != kMeshAnswerBytes) {
    return InvalidArgumentError("mesh answer: " + std::to_string(in.size()) + " bytes, expected " +
                                std::to_string(kMeshAnswerBytes));
  }
  const std::byte* p = in.data();
  const uint8_t source = LoadU8(p + 40);
  if (source > static_cast<uint8_t>(TimestampSource::kKernelSoftware)) {
    return InvalidArgumentError("mesh answer: unknown timestamp source " + std::to_string(source));
  }
  for (size_t i = 41; i < kMeshAnswerBytes; ++i) {
    if (p[i] != std::byte{0}) {
      return InvalidArgumentError("mesh answer: reserved bytes are not zero");
    }
  }
  return MeshAnswer{.epoch = LoadU64(p + 8),
                    .sequence = LoadU64(p + 16),
                    .sent_ns = LoadU64(p + 24),
                    .dwell_ns = LoadU64(p + 32),
                    .dwell_source = static_cast<TimestampSource>(source)};
}

}  // namespace wharf::wire
