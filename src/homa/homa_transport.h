// homa/homa_transport.h: HomaTransport, the name callers use for a homa
// endpoint as a transport::MessageTransport. HomaTransport::Create(config,
// net, clock) builds the single-endpoint case: a HomaHost on `net` owning
// one endpoint (config.endpoint_id, the default endpoint unless set). To put
// several endpoints on one socket, create a HomaHost and open them from it
// (homa_host.h, homa_endpoint.h; docs/protocol.md section 4).
#pragma once

#include "homa/homa_endpoint.h"
#include "homa/homa_host.h"

namespace wharf::homa {

using HomaTransport = HomaEndpoint;

}  // namespace wharf::homa
