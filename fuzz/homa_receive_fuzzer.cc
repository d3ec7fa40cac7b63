// fuzz/homa_receive_fuzzer.cc: hostile datagrams into a live HomaTransport.
//
// Two hosts on a FakeNetwork run real RPCs, each host with two endpoints on
// its socket (the default one and kSecond), while a third, "attacker", sends
// datagrams built from the fuzz input to the server. Most inputs are steered
// into valid headers (right version, one of the open endpoint ids or an
// unknown one, ids near the real RPCs') so that dispatch and the handlers'
// state machine, not just the decoder, see them. Nothing may
// crash, hang or trip a sanitizer; the legitimate RPCs may fail (the attacker
// can forge their packets) but the transports must stay consistent.
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <vector>

#include "base/sim_clock.h"
#include "homa/homa_transport.h"
#include "transport/fake/fake_network.h"
#include "wire/byte_order.h"
#include "wire/packet.h"

namespace wharf {
namespace {

constexpr uint16_t kSecond = 5;  // the second endpoint on each host

void DrainEvents(homa::HomaTransport& t, bool serve) {
  homa::HomaEvent e;
  while (t.PopEvent(&e)) {
    if (serve && e.kind == homa::HomaEvent::Kind::kRequest) {
      (void)t.SendResponse(e.server_key, std::move(e.message));
    }
  }
}

}  // namespace
}  // namespace wharf

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using namespace wharf;
  SimClock clock;
  transport::fake::FakeNetwork net(clock, 1);
  auto a_addr = transport::NetAddress::Ipv4(0xC6120001, 4000);
  auto b_addr = transport::NetAddress::Ipv4(0xC6120002, 4000);
  auto x_addr = transport::NetAddress::Ipv4(0xC6120003, 4000);
  auto a_net = net.Attach("A", a_addr);
  auto b_net = net.Attach("B", b_addr);
  auto x_net = net.Attach("X", x_addr);
  homa::HomaConfig config;
  config.unsched_bytes = 3000;
  config.max_incoming_bytes = 6000;
  config.max_message_bytes = 1 << 20;
  config.max_incoming_buffer_bytes = 8 << 20;
  // Short, so that the run-out below (400 ms) outlasts any RPC the attacker
  // left waiting on silence or on restarts (a server told its client is
  // unreachable tombstones its RPCs; the live client then restarts until
  // max_restarts, about 5 ms apart).
  config.peer_timeout_ns = 100 * kNsPerMs;
  config.max_restarts = 20;
  config.max_peers = 4;
  auto a = homa::HomaTransport::Create(config, a_net.get(), clock);
  auto b = homa::HomaTransport::Create(config, b_net.get(), clock);
  if (!a.ok() || !b.ok()) return 0;
  auto a2 = (*a)->host()->OpenEndpoint(kSecond);
  auto b2 = (*b)->host()->OpenEndpoint(kSecond);
  if (!a2.ok() || !b2.ok()) return 0;
  uint64_t first_id = 0;
  for (size_t i = 0; i < 3; ++i) {
    auto id = (*a)->SendRequest(b_addr, Buffer::Allocate(100 + i * 4000));
    if (id.ok() && first_id == 0) first_id = *id;
    // Interleaved ids to B's other endpoint, from both of A's.
    (void)(*a2)->SendRequestTo(b_addr, kSecond, Buffer::Allocate(50 + i * 3000));
    (void)(*a)->SendRequestTo(b_addr, kSecond, Buffer::Allocate(10));
  }
  auto poll_all = [&] {
    (*a)->Poll();
    (*b)->Poll();
    (*b2)->Poll();
    DrainEvents(**a, false);
    DrainEvents(**a2, false);
    DrainEvents(**b, true);
    DrainEvents(**b2, true);
  };
  // The input is a sequence of records: [len u8][steer u8][bytes...].
  size_t pos = 0;
  int rounds = 0;
  while (pos + 2 <= size && rounds < 64) {
    size_t len = std::min<size_t>(data[pos], size - pos - 2);
    uint8_t steer = data[pos + 1];
    // An empty vector's data() may be null, which memcpy must never get.
    std::vector<std::byte> packet(reinterpret_cast<const std::byte*>(data + pos + 2),
                                  reinterpret_cast<const std::byte*>(data + pos + 2 + len));
    pos += 2 + len;
    if ((steer & 1) && len >= wire::kCommonHeaderBytes) {
      // A plausible header: right version and endpoint id, an id near real
      // ones.
      packet[0] = std::byte{wire::kProtocolVersion};
      packet[1] = std::byte{static_cast<uint8_t>(0x10 + (steer >> 1) % 9)};
      // dport: mostly one of B's endpoints, now and then one it lacks.
      const uint16_t dports[] = {wire::kDefaultEndpoint, kSecond, wire::kDefaultEndpoint, 77};
      wire::StoreBig<uint16_t>(packet.data() + 6, dports[len % 4]);
      uint64_t id = first_id + ((steer >> 4) & 7);
      wire::StoreBig<uint64_t>(packet.data() + 8, id);
    }
    if ((steer & 0x7e) == 0x7e) {
      // Now and then the network says a peer is unreachable (ICMP).
      transport::PathError error;
      error.to = (steer & 0x80) ? b_addr : a_addr;
      error.kind = static_cast<transport::PathError::Kind>(len % 5);
      ((steer & 0x80) ? a_net : b_net)->InjectPathError(error);
    }
    transport::OutDatagram out{b_addr, packet, 0};
    (void)x_net->Send({&out, 1});
    // Let everything react: deliveries, polls, and now and then a timer tick.
    clock.AdvanceBy((steer & 0x80) ? 2 * kNsPerMs : 5 * kNsPerUs);
    for (int i = 0; i < 4; ++i) poll_all();
    ++rounds;
  }
  // Run the protocol out: every RPC must end (response or failure).
  for (int i = 0; i < 400 && (*a)->host()->num_client_rpcs() > 0; ++i) {
    clock.AdvanceBy(kNsPerMs);
    poll_all();
  }
  if ((*a)->host()->num_client_rpcs() != 0) __builtin_trap();  // an RPC never ended
  // Closing an endpoint with RPCs in any state must leave its host sound.
  b2->reset();
  a2->reset();
  for (int i = 0; i < 4; ++i) {
    clock.AdvanceBy(kNsPerMs);
    (*a)->Poll();
    (*b)->Poll();
    DrainEvents(**a, false);
    DrainEvents(**b, true);
  }
  return 0;
}
