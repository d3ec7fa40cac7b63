// engine/connection_table.h: ConnectionTable, an engine's connections: each
// connection's record (ConnState) by the local id the host holds, the index
// by the id both ends use on the wire, the count peers opened (capped), and
// accepting: whether the endpoint listens, connections peers opened that
// no Accept took yet, and the Accepts waiting for one. What flows over a
// connection (messages, receivers, keep-alives) the Engine handles on the
// ConnState; it also completes the operations this names.
//
// Owned by the Engine; single-threaded (the engine's). A ConnState stays
// where it is until Erase or Clear (a node-based map).
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <map>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "engine/connection_state.h"
#include "engine/peer_ref.h"
#include "wharf/result.h"

namespace wharf::engine {

class ConnectionTable {
 public:
  // Peers may open at most `max_from_peers` connections; the wire ids of
  // the connections we open follow from `wire_id_seed`, which must differ
  // across restarts of the process.
  ConnectionTable(size_t max_from_peers, uint64_t wire_id_seed)
      : max_from_peers_(max_from_peers), wire_id_seed_(wire_id_seed) {}

  ConnState* Find(uint64_t local) {
    auto it = conns_.find(local);
    return it == conns_.end() ? nullptr : &it->second;
  }
  const ConnState* Find(uint64_t local) const {
    auto it = conns_.find(local);
    return it == conns_.end() ? nullptr : &it->second;
  }
  // The connection `peer` knows as `wire_id`; null if none.
  ConnState* FindByWire(const PeerRef& peer, uint64_t wire_id);

  // A connection we open to `peer`, with a new local id and wire id;
  // `stream_method` nonzero opens a stream of that method (ordered).
  ConnState& Open(const PeerRef& peer, bool ordered, uint32_t stream_method = 0);
  // `peer` opens connection `wire_id` to us: its local id, or 0 when it is
  // open already (a repeated connect). A plain connection (stream_method 0)
  // needs Listen: kUnavailable without; a stream needs its method served
  // (ServeStreams): kUnimplemented without. kResourceExhausted when peers
  // hold max_from_peers.
  Result<uint64_t> OpenFromPeer(const PeerRef& peer, uint64_t wire_id, bool ordered,
                                uint32_t stream_method = 0);
  // Forgets connection `local` (the host released it, or our connect
  // failed); its receivers, if any, are returned.
  std::deque<uint64_t> Erase(uint64_t local);

  void Listen() { listening_ = true; }
  bool listening() const { return listening_; }
  // Peers may open streams of `method` (or no longer may: streams open
  // already go on).
  void ServeStreams(uint32_t method, bool served);
  bool serves_streams() const { return !served_streams_.empty(); }

  // Connections peers open wait in one of two lines: plain ones for
  // Accept, streams for AcceptStream (the host hands those to the stream's
  // server, not to the application's Accept).
  // Connection `local`, which a peer opened, goes to the oldest Accept of
  // its line waiting: its op id (to complete with `local`); 0 if none
  // waits, and the connection is queued for the next one.
  uint64_t Accepted(uint64_t local);
  // The oldest connection of a line that no Accept took; 0 if none.
  uint64_t TakeAccepted(bool streams = false);
  // Accept operation `op` waits for a connection of its line (until
  // Accepted or RemoveAcceptWaiter).
  void AddAcceptWaiter(uint64_t op, bool streams = false) {
    (streams ? streams_ : plain_).waiters.push_back(op);
  }
  void RemoveAcceptWaiter(uint64_t op);

  // `f(local_id, conn)` for every connection, in no order; `f` must not
  // open or erase connections.
  template <typename F>
  void ForEach(F&& f) {
    for (auto& [local, conn] : conns_) f(local, conn);
  }
  // Forgets every connection and Accept (the engine shuts down); the
  // endpoint still listens.
  void Clear();

  size_t size() const { return conns_.size(); }
  size_t from_peers() const { return from_peers_; }
  uint64_t refused() const { return refused_; }  // connects refused (max_from_peers)

 private:
  // Constant after construction.
  const size_t max_from_peers_;

  std::unordered_map<uint64_t, ConnState> conns_;              // by local id
  std::map<std::pair<PeerRef, uint64_t>, uint64_t> by_wire_;  // (peer, wire id) -> local id
  uint64_t next_local_ = 1;
  uint64_t wire_id_seed_;       // advanced for each connection we open
  size_t from_peers_ = 0;       // conns_ entries peers opened (max_from_peers_)
  bool listening_ = false;
  std::unordered_set<uint32_t> served_streams_;  // methods peers may open streams of
  struct AcceptLine {
    std::deque<uint64_t> queue;    // local ids peers opened, not yet accepted
    std::deque<uint64_t> waiters;  // op ids of Accepts waiting, oldest first
  };
  AcceptLine plain_;
  AcceptLine streams_;
  uint64_t refused_ = 0;
};

}  // namespace wharf::engine
