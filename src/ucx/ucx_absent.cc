// OpenUcxTransport for a build without UCX (cmake/WharfUcx.cmake links this
// one when libucx-dev was not found or WHARF_UCX=OFF).
#include "ucx/ucx_opener.h"

namespace wharf::ucx {

bool UcxTransportBuilt() { return false; }

Result<std::unique_ptr<transport::MessageTransport>> OpenUcxTransport(const UcxConfig& config,
                                                                     const Clock& /*clock*/) {
  return UnimplementedError("ucx://" + config.bind.ToString() +
                            ": this build has no UCX (install libucx-dev and rebuild with "
                            "WHARF_UCX=AUTO or ON)");
}

}  // namespace wharf::ucx
