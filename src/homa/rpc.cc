// RpcState names for logs and test messages.
#include "homa/rpc.h"

namespace wharf::homa {

const char* RpcStateName(RpcState state) {
  switch (state) {
    case RpcState::kClientSending: return "CLIENT_SENDING";
    case RpcState::kClientReceiving: return "CLIENT_RECEIVING";
    case RpcState::kServerReceiving: return "SERVER_RECEIVING";
    case RpcState::kServerInService: return "SERVER_IN_SERVICE";
    case RpcState::kServerSending: return "SERVER_SENDING";
    case RpcState::kServerAwaitAck: return "SERVER_AWAIT_ACK";
  }
  return "UNKNOWN";
}

}  // namespace wharf::homa
