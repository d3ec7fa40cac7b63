// bench/cluster_samples.h: the sample file a `wharf bench cluster`
// node writes (format in docs/benchmarks.md, "The cluster node"): the magic
// "WBCSMP01", then one little-endian record per completed RPC of
// (uint64 request_bytes, uint64 response_bytes, int64 rtt_ns). Also the
// size ladder of the unloaded pass, which every node implementation shares.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "bench/slowdown.h"
#include "bench/workload.h"
#include "wharf/result.h"
#include "wharf/status.h"

namespace wharf::bench {

inline constexpr std::string_view kSampleMagic = "WBCSMP01";
inline constexpr size_t kSampleRecordBytes = 24;

// The file's bytes for `samples` (magic included).
std::string EncodeSamples(std::span<const RpcSample> samples);
// Parses file bytes; InvalidArgument (naming `source`) on a wrong magic or a
// partial record. Appends to `out`.
Status DecodeSamples(std::string_view bytes, std::string_view source, std::vector<RpcSample>* out);

// Writes `samples` to `path` (replacing it).
Status WriteSampleFile(const std::string& path, std::span<const RpcSample> samples);
// Reads `path` and appends its samples to `out`.
Status ReadSampleFile(const std::string& path, std::vector<RpcSample>* out);

// The sizes the unloaded pass measures: the workload's smallest size, about
// `steps` sizes spaced geometrically up to its largest, and the largest
// (strictly increasing, no duplicates). A fixed workload gives its one size.
std::vector<uint64_t> UnloadedSizes(const Workload& workload, int steps = 12);

}  // namespace wharf::bench
