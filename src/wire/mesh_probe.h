// wire/mesh_probe.h: the two messages of wharf's mesh probe, a request and
// its answer, carried as the payloads of an RPC to another wharfd's own
// endpoint (method kMeshProbeMethod; docs/mesh.md). Pure encode/decode over
// byte spans, big-endian like the rest of wire/.
//
// PROBE (the request), 32 bytes, then padding to the probe's size:
//    0 magic u32 "WMSH" (0x574D5348)
//    4 version u8 (2)   5 kind u8 (1 = probe)
//    6 answer_priority u8  the priority the answer is to travel at, plus
//                       one (1..8 = 0..7; 0: the responder's transport
//                       chooses), so that it comes back in the probe's class
//    7 reserved u8 (zero)
//    8 epoch u64        the prober's run: random at its start, so that the
//                       sequence numbers of a restarted prober never match
//                       answers meant for the one before
//   16 sequence u64     per target and transport, from 1
//   24 sent_ns u64      the prober's clock at sending (echoed back)
//   32 padding          any bytes (zero when we send), up to kMaxProbeBytes
//
// ANSWER, 48 bytes:
//    0 magic u32, version u8 (2), kind u8 (2 = answer), reserved u16 (zero)
//    8 epoch u64, 16 sequence u64, 24 sent_ns u64: the probe's, echoed
//   32 dwell_ns u64     how long the probe spent in the responder, from its
//                       arrival to the answer's departure as the responder
//                       measured them
//   40 dwell_source u8  how: TimestampSource
//   41 reserved (7 bytes, zero)
//
// Version 1 (before answer_priority) is read too, as version 2 with byte 6
// zero. Anything else (short, wrong magic or version, nonzero reserved
// bytes, an answer_priority over 8, a kind that does not belong, an answer
// longer than 48 bytes) is refused with a message that says what.
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>

#include "wharf/result.h"

namespace wharf::wire {

// The method number probes are called with on a wharfd's own endpoint.
inline constexpr uint32_t kMeshProbeMethod = 0x574D0001;
inline constexpr uint32_t kMeshProbeMagic = 0x574D5348;  // "WMSH"
inline constexpr uint8_t kMeshProbeVersion = 2;
inline constexpr uint8_t kOldestMeshProbeVersion = 1;
inline constexpr size_t kMeshProbeHeaderBytes = 32;
inline constexpr size_t kMeshAnswerBytes = 48;
// Largest probe (header and padding) a responder answers: a probe measures
// a path, it does not move data.
inline constexpr size_t kMaxProbeBytes = 64 * 1024;

// MeshProbe::answer_priority when the probe asks for none (the same value
// as transport::kPriorityBySize, which wire/ does not depend on).
inline constexpr int8_t kAnswerPriorityBySize = -1;
inline constexpr int8_t kMaxAnswerPriority = 7;

// Where a time came from.
enum class TimestampSource : uint8_t {
  kMonotonic = 0,        // CLOCK_MONOTONIC read by the process
  kKernelSoftware = 1,   // SO_TIMESTAMPING software stamps taken by the kernel
};

struct MeshProbe {
  uint64_t epoch = 0;
  uint64_t sequence = 0;
  uint64_t sent_ns = 0;
  // 0..7, or kAnswerPriorityBySize (the responder's transport chooses).
  int8_t answer_priority = kAnswerPriorityBySize;
};

struct MeshAnswer {
  uint64_t epoch = 0;
  uint64_t sequence = 0;
  uint64_t sent_ns = 0;
  uint64_t dwell_ns = 0;
  TimestampSource dwell_source = TimestampSource::kMonotonic;
};

// Writes a probe into `out` (its whole size: header, then zero padding);
// InvalidArgument when `out` is shorter than the header or longer than
// kMaxProbeBytes.
Status EncodeMeshProbe(const MeshProbe& probe, std::span<std::byte> out);
Result<MeshProbe> DecodeMeshProbe(std::span<const std::byte> in);

// Writes kMeshAnswerBytes into `out` (which must hold them).
Status EncodeMeshAnswer(const MeshAnswer& answer, std::span<std::byte> out);
Result<MeshAnswer> DecodeMeshAnswer(std::span<const std::byte> in);

}  // namespace wharf::wire
