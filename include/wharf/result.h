// wharf/result.h: Result<T>, either a T or a non-ok Status (shaped like
// std::expected<T, Status>, which C++20 lacks), and WHARF_ASSIGN_OR_RETURN.
#pragma once

#include <cstdlib>
#include <type_traits>
#include <utility>
#include <variant>

#include "wharf/status.h"

namespace wharf {

template <typename T>
class [[nodiscard]] Result {
  static_assert(!std::is_same_v<std::remove_cv_t<T>, Status>, "use Status, not Result<Status>");

 public:
  // A value.
  Result(const T& value) : rep_(std::in_place_index<0>, value) {}  // NOLINT: implicit by design
  Result(T&& value) : rep_(std::in_place_index<0>, std::move(value)) {}  // NOLINT
  template <typename U>
    requires(std::is_constructible_v<T, U &&> && !std::is_same_v<std::decay_t<U>, T> &&
             !std::is_same_v<std::decay_t<U>, Status> && !std::is_same_v<std::decay_t<U>, Result>)
  Result(U&& value) : rep_(std::in_place_index<0>, std::forward<U>(value)) {}  // NOLINT
  // An error. Passing an ok Status is a programming error and becomes kInternal.
  Result(Status status)  // NOLINT: implicit so that `return SomeError(...)` works
      : rep_(std::in_place_index<1>,
             status.ok() ? Status(StatusCode::kInternal, "Result built from an ok Status")
                         : std::move(status)) {}

  bool ok() const { return rep_.index() == 0; }

  // The error, or an ok Status when a value is held.
  Status status() const& { return ok() ? Status() : std::get<1>(rep_); }
  Status status() && { return ok() ? Status() : std::move(std::get<1>(rep_)); }

  // Accessing the value of an error Result aborts: check ok() first.
  T& value() & { return CheckedValue(); }
  const T& value() const& { return const_cast<Result*>(this)->CheckedValue(); }
  T&& value() && { return std::move(CheckedValue()); }

  T& operator*() & { return value(); }
  const T& operator*() const& { return value(); }
  T&& operator*() && { return std::move(*this).value(); }
  T* operator->() { return &value(); }
  const T* operator->() const { return &value(); }

  template <typename U>
  T value_or(U&& fallback) const& {
    return ok() ? std::get<0>(rep_) : static_cast<T>(std::forward<U>(fallback));
  }

 private:
  T& CheckedValue() {
    if (!ok()) std::abort();  // a bug in the caller, never input-driven
    return std::get<0>(rep_);
  }

  std::variant<T, Status> rep_;
};

}  // namespace wharf

#define WHARF_CONCAT_INNER_(a, b) a##b
#define WHARF_CONCAT_(a, b) WHARF_CONCAT_INNER_(a, b)

// WHARF_ASSIGN_OR_RETURN(auto x, MakeX()); assigns the value or returns the error.
#define WHARF_ASSIGN_OR_RETURN(lhs, rexpr) \
  WHARF_ASSIGN_OR_RETURN_IMPL_(WHARF_CONCAT_(wharf_result_, __LINE__), lhs, rexpr)
#define WHARF_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, rexpr) \
  auto tmp = (rexpr);                                 \
  if (!tmp.ok()) return std::move(tmp).status();      \
  lhs = std::move(tmp).value()
