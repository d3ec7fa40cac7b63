// The cluster node's sample file and the unloaded pass's sizes.
#include "bench/cluster_samples.h"

#include <cmath>
#include <cstring>
#include <fstream>
#include <iterator>

namespace wharf::bench {
namespace {

void PutU64(uint64_t v, char* out) {
  for (int i = 0; i < 8; ++i) out[i] = static_cast<char>((v >> (8 * i)) & 0xff);
}

uint64_t GetU64(const char* in) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= static_cast<uint64_t>(static_cast<unsigned char>(in[i])) << (8 * i);
  return v;
}

}  // namespace

std::string EncodeSamples(std::span<const RpcSample> samples) {
  std::string out(kSampleMagic.size() + samples.size() * kSampleRecordBytes, '\0');
  std::memcpy(out.data(), kSampleMagic.data(), kSampleMagic.size());
  char* p = out.data() + kSampleMagic.size();
  for (const RpcSample& s : samples) {
    PutU64(s.request_bytes, p);
    PutU64(s.response_bytes, p + 8);
    PutU64(static_cast<uint64_t>(s.rtt_ns), p + 16);
    p += kSampleRecordBytes;
  }
  return out;
}

Status DecodeSamples(std::string_view bytes, std::string_view source,
                     std::vector<RpcSample>* out) {
  if (bytes.substr(0, kSampleMagic.size()) != kSampleMagic) {
    return InvalidArgumentError(std::string(source) + ": not a sample file (expected magic " +
                                std::string(kSampleMagic) + ")");
  }
  bytes.remove_prefix(kSampleMagic.size());
  if (bytes.size() % kSampleRecordBytes != 0) {
    return InvalidArgumentError(std::string(source) + ": " + std::to_string(bytes.size()) +
                                " record bytes is not a multiple of 24 (truncated file?)");
  }
  out->reserve(out->size() + bytes.size() / kSampleRecordBytes);
  for (size_t i = 0; i < bytes.size(); i += kSampleRecordBytes) {
    const char* p = bytes.data() + i;
    out->push_back({.request_bytes = GetU64(p),
                    .response_bytes = GetU64(p + 8),
                    .rtt_ns = static_cast<DurationNs>(GetU64(p + 16))});
  }
  return OkStatus();
}

Status WriteSampleFile(const std::string& path, std::span<const RpcSample> samples) {
  const std::string bytes = EncodeSamples(samples);
  std::ofstream file(path, std::ios::binary | std::ios::trunc);
  file.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  file.close();
  if (!file) return InternalError("writing " + path + " failed");
  return OkStatus();
}

Status ReadSampleFile(const std::string& path, std::vector<RpcSample>* out) {
  std::ifstream file(path, std::ios::binary);
  if (!file) return NotFoundError("cannot open sample file " + path);
  std::string bytes((std::istreambuf_iterator<char>(file)), std::istreambuf_iterator<char>());
  return DecodeSamples(bytes, path, out);
}

std::vector<uint64_t> UnloadedSizes(const Workload& workload, int steps) {
  const uint64_t lo = std::max<uint64_t>(1, workload.min_bytes());
  const uint64_t hi = std::max(lo, workload.max_bytes());
  std::vector<uint64_t> sizes{lo};
  if (steps < 1) steps = 1;
  const double ratio = std::pow(static_cast<double>(hi) / static_cast<double>(lo), 1.0 / steps);
  for (int i = 1; i < steps; ++i) {
    const auto size = static_cast<uint64_t>(std::llround(static_cast<double>(lo) * std::pow(ratio, i)));
    if (size > sizes.back() && size < hi) sizes.push_back(size);
  }
  if (hi > sizes.back()) sizes.push_back(hi);
  return sizes;
}

}  // namespace wharf::bench
