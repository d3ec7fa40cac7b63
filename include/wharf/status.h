// wharf/status.h: Status, the error value every fallible wharf call returns.
//
// A Status is a canonical code plus a message that names the peer, key or
// limit involved. No exception crosses the wharf API; a Status does. See
// wharf/result.h for Result<T>, a value or a Status.
#pragma once

#include <cstdint>
#include <ostream>
#include <string>
#include <string_view>
#include <utility>

namespace wharf {

// Canonical codes, numbered as gRPC and Abseil number them so that they map
// one to one onto RPC status codes on the wire.
enum class StatusCode : uint8_t {
  kOk = 0,
  kCancelled = 1,
  kUnknown = 2,
  kInvalidArgument = 3,
  kDeadlineExceeded = 4,
  kNotFound = 5,
  kAlreadyExists = 6,
  kPermissionDenied = 7,
  kResourceExhausted = 8,
  kFailedPrecondition = 9,
  kAborted = 10,
  kOutOfRange = 11,
  kUnimplemented = 12,
  kInternal = 13,
  kUnavailable = 14,
  kDataLoss = 15,
};

// "kInvalidArgument" -> "INVALID_ARGUMENT"; unknown values give "UNKNOWN_CODE".
std::string_view StatusCodeName(StatusCode code);

// A code read from another process (a peer's reply, a ring): the code it
// names, or kUnknown for one this build does not know.
StatusCode StatusCodeFromWire(uint32_t code);

// Cheap to copy when ok (no allocation). Not thread-safe to mutate; safe to
// share read-only.
class [[nodiscard]] Status {
 public:
  Status() = default;  // ok
  Status(StatusCode code, std::string message) : code_(code), message_(std::move(message)) {}

  bool ok() const { return code_ == StatusCode::kOk; }
  StatusCode code() const { return code_; }
  const std::string& message() const { return message_; }

  // "INVALID_ARGUMENT: wharfd.yaml:3: ..." or "OK".
  std::string ToString() const;

  // Returns this status with "context: " prepended to the message; ok stays ok.
  Status WithContext(std::string_view context) const&;
  Status WithContext(std::string_view context) &&;

  // Explicitly discards a status whose failure the caller chose to ignore.
  void IgnoreError() const {}

  friend bool operator==(const Status& a, const Status& b) {
    return a.code_ == b.code_ && a.message_ == b.message_;
  }

 private:
  StatusCode code_ = StatusCode::kOk;
  std::string message_;
};

std::ostream& operator<<(std::ostream& os, const Status& status);

inline Status OkStatus() { return Status(); }
inline Status CancelledError(std::string msg) { return {StatusCode::kCancelled, std::move(msg)}; }
inline Status UnknownError(std::string msg) { return {StatusCode::kUnknown, std::move(msg)}; }
inline Status InvalidArgumentError(std::string msg) {
  return {StatusCode::kInvalidArgument, std::move(msg)};
}
inline Status DeadlineExceededError(std::string msg) {
  return {StatusCode::kDeadlineExceeded, std::move(msg)};
}
inline Status NotFoundError(std::string msg) { return {StatusCode::kNotFound, std::move(msg)}; }
inline Status AlreadyExistsError(std::string msg) {
  return {StatusCode::kAlreadyExists, std::move(msg)};
}
inline Status PermissionDeniedError(std::string msg) {
  return {StatusCode::kPermissionDenied, std::move(msg)};
}
inline Status ResourceExhaustedError(std::string msg) {
  return {StatusCode::kResourceExhausted, std::move(msg)};
}
inline Status FailedPreconditionError(std::string msg) {
  return {StatusCode::kFailedPrecondition, std::move(msg)};
}
inline Status AbortedError(std::string msg) { return {StatusCode::kAborted, std::move(msg)}; }
inline Status OutOfRangeError(std::string msg) { return {StatusCode::kOutOfRange, std::move(msg)}; }
inline Status UnimplementedError(std::string msg) {
  return {StatusCode::kUnimplemented, std::move(msg)};
}
inline Status InternalError(std::string msg) { return {StatusCode::kInternal, std::move(msg)}; }
inline Status UnavailableError(std::string msg) {
  return {StatusCode::kUnavailable, std::move(msg)};
}
inline Status DataLossError(std::string msg) { return {StatusCode::kDataLoss, std::move(msg)}; }

// Builds a Status from errno after a failed system call:
// ErrnoToStatus(errno, "bind 0.0.0.0:4000") -> "UNAVAILABLE: bind 0.0.0.0:4000: Address in use".
Status ErrnoToStatus(int errno_value, std::string_view what);

}  // namespace wharf

// Returns from the enclosing function if `expr` (a Status) is not ok.
#define WHARF_RETURN_IF_ERROR(expr)                                    \
  do {                                                                 \
    if (::wharf::Status wharf_status_ = (expr); !wharf_status_.ok()) { \
      return wharf_status_;                                            \
    }                                                                  \
  } while (0)
