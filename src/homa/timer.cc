// HomaTransport's protocol timer, run every tick_ns from Poll(): receivers
// that hear nothing send RESEND (milliseconds, not microseconds: Linux can
// hold packets for several ms, and eager resends cost more than they save),
// silent peers are declared dead after timeout_ticks, servers ask for missing
// acks, and owed acks are flushed.
#include <string>
#include <vector>

#include "homa/homa_transport.h"

namespace wharf::homa {
namespace {

// Caps the RESENDs of one tick, so that a dead peer with thousands of RPCs
// does not turn each tick into a packet storm.
constexpr int kMaxResendsPerTick = 1000;

bool Due(int silent, int first, int interval) {
  return silent >= first && (silent - first) % interval == 0;
}

}  // namespace

void HomaTransport::Tick() {
  ++tick_count_;
  std::vector<uint64_t> dead_clients;
  std::vector<ServerRpcKey> dead_servers;
  int resends = 0;
  for (auto& [id, rpc] : client_rpcs_) {
    ++rpc->silent_ticks;
    if (rpc->silent_ticks >= config_.timeout_ticks) {
      dead_clients.push_back(id);
    } else if (resends < kMaxResendsPerTick &&
               Due(rpc->silent_ticks, config_.resend_ticks, config_.resend_interval_ticks)) {
      SendResend(*rpc);
      ++resends;
    }
  }
  for (auto& [key, rpc] : server_rpcs_) {
    // The application holds the RPC: the client keeps it alive with RESENDs
    // that we answer with BUSY; no timer of ours runs.
    if (rpc->state == RpcState::kServerInService) continue;
    ++rpc->silent_ticks;
    if (rpc->silent_ticks >= config_.timeout_ticks) {
      dead_servers.push_back(key);
    } else if (rpc->state == RpcState::kServerReceiving) {
      if (resends < kMaxResendsPerTick &&
          Due(rpc->silent_ticks, config_.resend_ticks, config_.resend_interval_ticks)) {
        SendResend(*rpc);
        ++resends;
      }
    } else if (rpc->state == RpcState::kServerAwaitAck &&
               Due(rpc->silent_ticks, config_.need_ack_ticks, config_.resend_interval_ticks)) {
      EmitControl(rpc->peer_addr, rpc->peer_port, rpc->id, wire::NeedAck{});
      ++stats_.need_acks_sent;
    }
  }
  for (uint64_t id : dead_clients) {
    auto it = client_rpcs_.find(id);
    if (it == client_rpcs_.end()) continue;
    Rpc& rpc = *it->second;
    ++stats_.client_timeouts;
    FailClientRpc(rpc, UnavailableError(
                           "homa: no answer from " + rpc.peer_addr.ToString() + " for " +
                           std::to_string(config_.timeout_ticks * config_.tick_ns / kNsPerMs) +
                           " ms (RPC " + std::to_string(id) + "); peer presumed dead"));
  }
  for (const ServerRpcKey& key : dead_servers) {
    ++stats_.server_timeouts;
    DestroyServerRpc(key, /*tombstone=*/true);
  }
  FlushAcks();
}

void HomaTransport::SendResend(Rpc& rpc) {
  wire::Resend resend;
  resend.priority = static_cast<uint8_t>(config_.max_sched_priority);
  if (rpc.in) {
    auto gap = rpc.in->FirstGap();
    if (!gap) {
      // Everything granted has arrived: the sender waits for us, because
      // the grant scheduler is serving other messages first. Make sure a
      // grant pass runs, and repeat our last GRANT as a keep-alive: the
      // sender answers BUSY, so neither side takes our own scheduling for
      // the other's death.
      grants_dirty_ = true;
      EmitControl(rpc.peer_addr, rpc.peer_port, rpc.id,
                  wire::Grant{rpc.in->granted(), static_cast<uint8_t>(config_.max_sched_priority), 0});
      ++stats_.grants_sent;
      return;
    }
    resend.offset = gap->first;
    resend.length = gap->second - gap->first;
  } else {
    // A client with no response byte yet: ask for the start of the response.
    // A live server answers with data or BUSY, one that lost the request
    // with RPC_UNKNOWN (and we restart).
    resend.offset = 0;
    resend.length = config_.unsched_bytes;
  }
  EmitControl(rpc.peer_addr, rpc.peer_port, rpc.id, resend);
  ++stats_.resends_sent;
}

void HomaTransport::FlushAcks() {
  peers_.ForEach([this](Peer& peer) {
    while (!peer.pending_acks.empty()) {
      wire::AckList acks;
      // Acks for different server ports go in separate packets: a packet's
      // dport names the server the acks are for.
      uint16_t port = peer.pending_acks.back().server_port;
      for (size_t i = peer.pending_acks.size(); i-- > 0 && acks.count < wire::kMaxAcksPerPacket;) {
        if (peer.pending_acks[i].server_port != port) continue;
        acks.acks[acks.count++] = peer.pending_acks[i];
        peer.pending_acks.erase(peer.pending_acks.begin() + static_cast<ptrdiff_t>(i));
      }
      EmitControl(peer.addr, port, acks.acks[0].client_id, acks);
      ++stats_.acks_sent;
    }
  });
}

}  // namespace wharf::homa
