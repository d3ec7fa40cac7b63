// bench/wire_bench.cc: cost of the wire codec on the paths the engine runs per
// packet: writing a DATA header in place, decoding a full-size DATA and a
// GRANT, and Describe (packet logs in scenario tests).
#include <cstddef>
#include <cstdlib>
#include <string>
#include <vector>

#include <benchmark/benchmark.h>

#include "wire/packet.h"

namespace wharf::wire {
namespace {

constexpr size_t kPayloadBytes = 1400;

CommonHeader Common(PacketType type) {
  return CommonHeader{type, 0, 32768, 4000, 0x18f3a2b400000002};
}

DataHeader SampleDataHeader() {
  return DataHeader{.message_length = 100000,
                    .offset = 14000,
                    .incoming = 60000,
                    .cutoff_version = 3,
                    .ack = Ack{0x18f3a2b3fffffffe, 4000},
                    .ack_floor = 0x18f3a2b400000000};
}

std::vector<std::byte> EncodeOrDie(const Packet& p) {
  std::vector<std::byte> buf(kMaxHeaderBytes + kPayloadBytes);
  Result<size_t> n = Encode(p, buf);
  if (!n.ok()) std::abort();  // a bug in this benchmark
  buf.resize(*n);
  return buf;
}

std::vector<std::byte> DataPacketBytes() {
  static const std::vector<std::byte> kPayload(kPayloadBytes, std::byte{0x5A});
  return EncodeOrDie(Packet{Common(PacketType::kData), Data{SampleDataHeader(), kPayload}});
}

std::vector<std::byte> GrantPacketBytes() {
  return EncodeOrDie(Packet{Common(PacketType::kGrant), Grant{120000, 3, 0}});
}

void BM_EncodeDataHeader(benchmark::State& state) {
  const CommonHeader common = Common(PacketType::kData);
  DataHeader header = SampleDataHeader();
  std::vector<std::byte> buf(kDataHeaderBytes + kPayloadBytes);
  for (auto _ : state) {
    Status s = EncodeDataHeader(common, header, buf);
    benchmark::DoNotOptimize(s);
    benchmark::ClobberMemory();
    header.offset = header.offset == 14000 ? 15400 : 14000;  // defeat hoisting
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_EncodeDataHeader);

void BM_DecodeData1400(benchmark::State& state) {
  const std::vector<std::byte> wire = DataPacketBytes();
  for (auto _ : state) {
    benchmark::DoNotOptimize(wire.data());
    Result<Packet> p = Decode(wire);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeData1400);

void BM_DecodeGrant(benchmark::State& state) {
  const std::vector<std::byte> wire = GrantPacketBytes();
  for (auto _ : state) {
    benchmark::DoNotOptimize(wire.data());
    Result<Packet> p = Decode(wire);
    benchmark::DoNotOptimize(p);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DecodeGrant);

void BM_DescribeData(benchmark::State& state) {
  const std::vector<std::byte> wire = DataPacketBytes();
  for (auto _ : state) {
    std::string s = Describe(wire);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DescribeData);

void BM_DescribeGrant(benchmark::State& state) {
  const std::vector<std::byte> wire = GrantPacketBytes();
  for (auto _ : state) {
    std::string s = Describe(wire);
    benchmark::DoNotOptimize(s);
  }
  state.SetItemsProcessed(state.iterations());
}
BENCHMARK(BM_DescribeGrant);

}  // namespace
}  // namespace wharf::wire
