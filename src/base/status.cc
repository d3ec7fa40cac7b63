// Status formatting and errno conversion (the type lives in include/wharf/status.h).
#include "wharf/status.h"

#include <cerrno>
#include <cstring>

namespace wharf {

StatusCode StatusCodeFromWire(uint32_t code) {
  return code <= static_cast<uint32_t>(StatusCode::kDataLoss) ? static_cast<StatusCode>(code)
                                                             : StatusCode::kUnknown;
}

std::string_view StatusCodeName(StatusCode code) {
  switch (code) {
    case StatusCode::kOk: return "OK";
    case StatusCode::kCancelled: return "CANCELLED";
    case StatusCode::kUnknown: return "UNKNOWN";
    case StatusCode::kInvalidArgument: return "INVALID_ARGUMENT";
    case StatusCode::kDeadlineExceeded: return "DEADLINE_EXCEEDED";
    case StatusCode::kNotFound: return "NOT_FOUND";
    case StatusCode::kAlreadyExists: return "ALREADY_EXISTS";
    case StatusCode::kPermissionDenied: return "PERMISSION_DENIED";
    case StatusCode::kResourceExhausted: return "RESOURCE_EXHAUSTED";
    case StatusCode::kFailedPrecondition: return "FAILED_PRECONDITION";
    case StatusCode::kAborted: return "ABORTED";
    case StatusCode::kOutOfRange: return "OUT_OF_RANGE";
    case StatusCode::kUnimplemented: return "UNIMPLEMENTED";
    case StatusCode::kInternal: return "INTERNAL";
    case StatusCode::kUnavailable: return "UNAVAILABLE";
    case StatusCode::kDataLoss: return "DATA_LOSS";
  }
  return "UNKNOWN_CODE";
}

std::string Status::ToString() const {
  if (ok()) return "OK";
  std::string out(StatusCodeName(code_));
  out += ": ";
  out += message_;
  return out;
}

Status Status::WithContext(std::string_view context) const& {
  Status copy = *this;
  return std::move(copy).WithContext(context);
}

Status Status::WithContext(std::string_view context) && {
  if (ok()) return *this;
  std::string msg(context);
  msg += ": ";
  msg += message_;
  message_ = std::move(msg);
  return std::move(*this);
}

std::ostream& operator<<(std::ostream& os, const Status& status) {
  return os << status.ToString();
}

Status ErrnoToStatus(int errno_value, std::string_view what) {
  StatusCode code;
  switch (errno_value) {
    case EINVAL:
    case EAFNOSUPPORT:
    case EMSGSIZE: code = StatusCode::kInvalidArgument; break;
    case ENOENT: code = StatusCode::kNotFound; break;
    case EEXIST: code = StatusCode::kAlreadyExists; break;
    case EACCES:
    case EPERM: code = StatusCode::kPermissionDenied; break;
    case ENOMEM:
    case ENOBUFS:
    case EMFILE:
    case ENFILE:
    case ENOSPC: code = StatusCode::kResourceExhausted; break;
    case ETIMEDOUT: code = StatusCode::kDeadlineExceeded; break;
    case ENOSYS:
    case EOPNOTSUPP: code = StatusCode::kUnimplemented; break;
    default: code = StatusCode::kUnavailable; break;
  }
  std::string msg(what);
  msg += ": ";
  msg += std::strerror(errno_value);
  return {code, std::move(msg)};
}

}  // namespace wharf
