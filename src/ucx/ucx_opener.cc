// OpenUcxTransport for a build with UCX: a UcxMessageTransport.
#include "ucx/ucx_opener.h"

#include "ucx/ucx_transport.h"

namespace wharf::ucx {

bool UcxTransportBuilt() { return true; }

Result<std::unique_ptr<transport::MessageTransport>> OpenUcxTransport(const UcxConfig& config,
                                                                     const Clock& clock) {
  WHARF_ASSIGN_OR_RETURN(std::unique_ptr<UcxMessageTransport> opened,
                         UcxMessageTransport::Open(config, clock));
  return std::unique_ptr<transport::MessageTransport>(std::move(opened));
}

}  // namespace wharf::ucx
