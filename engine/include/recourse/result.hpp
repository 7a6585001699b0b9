// Result<T> and Status: the one way every fallible call of the public API reports failure.
//
// A call either produces its value or does not; either way it may have diagnostics to report
// (warnings of a successful compile, the errors of a failed one). Result<T> carries both; Status
// is Result<void>, for calls with nothing to return. No public function reports failure through
// an exception, an out-parameter or a bare string: a failed Result always holds at least one
// Diagnostic with a stable code (docs/language.md, "Diagnostics": E0xx for policies, C0xx for
// contexts, N0xx for envelopes and adapters, S0xx for stores and state), an error, or a warning
// that says why no answer was reached (W109: a question beyond its work limit).
//
// Accessing the value of a failed Result is a programming error, as with std::optional: value()
// throws std::bad_optional_access; operator* and operator-> are unchecked. Ask ok() first.
#pragma once

#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "recourse/diagnostic.hpp"

namespace recourse {

/// A diagnostic of severity Error with `code` and `message` and no position: how a failure that
/// is not about a place in a policy file is reported (an envelope that is not JSON, a store that
/// cannot be opened).
Diagnostic error_diagnostic(std::string code, std::string message, std::string help = {});

/// The first error's message, else the first diagnostic's, else "".
std::string first_message(const std::vector<Diagnostic>& diagnostics);

/// The value of a call, or the diagnostics that say why there is none. Warnings and notes may
/// come with a value too. Copyable and movable when T is.
template <typename T>
class [[nodiscard]] Result {
 public:
  /// A success holding `value`, with `diagnostics` (warnings, notes) beside it.
  Result(T value, std::vector<Diagnostic> diagnostics = {})  // NOLINT: implicit by design
      : value_(std::move(value)), diagnostics_(std::move(diagnostics)) {}

  /// A failure. `diagnostics` should say why; when it is empty, an E099 (internal error) is
  /// added, so a failure never comes without a reason.
  static Result failure(std::vector<Diagnostic> diagnostics) {
    return Result(std::move(diagnostics));
  }
  /// A failure with one error diagnostic.
  static Result failure(Diagnostic diagnostic) {
    std::vector<Diagnostic> list;
    list.push_back(std::move(diagnostic));
    return Result(std::move(list));
  }

  /// True when the call produced its value.
  bool ok() const noexcept { return value_.has_value(); }
  explicit operator bool() const noexcept { return ok(); }

  /// The value; throws std::bad_optional_access when !ok().
  const T& value() const& { return value_.value(); }
  T& value() & { return value_.value(); }
  T&& value() && { return std::move(value_).value(); }
  /// The value, unchecked (ok() must be true).
  const T& operator*() const& noexcept { return *value_; }
  T& operator*() & noexcept { return *value_; }
  const T* operator->() const noexcept { return &*value_; }
  T* operator->() noexcept { return &*value_; }

  /// Every diagnostic of the call: the errors of a failure, warnings of a success.
  const std::vector<Diagnostic>& diagnostics() const& noexcept { return diagnostics_; }
  std::vector<Diagnostic>&& diagnostics() && noexcept { return std::move(diagnostics_); }
  /// The first error's message (else the first diagnostic's, "" without any): for one-line
  /// reports.
  std::string message() const { return first_message(diagnostics_); }

 private:
  explicit Result(std::vector<Diagnostic> diagnostics) : diagnostics_(std::move(diagnostics)) {
    if (diagnostics_.empty())
      diagnostics_.push_back(
          error_diagnostic("E099", "internal error: a failure without a diagnostic"));
  }
  std::optional<T> value_;
  std::vector<Diagnostic> diagnostics_;
};

/// The outcome of a call that returns nothing: ok, or the diagnostics that say why not.
template <>
class [[nodiscard]] Result<void> {
 public:
  /// A success, with `diagnostics` (warnings, notes) beside it.
  Result(std::vector<Diagnostic> diagnostics = {}) : diagnostics_(std::move(diagnostics)) {}
  /// A failure (an E099 is added when `diagnostics` is empty).
  static Result failure(std::vector<Diagnostic> diagnostics) {
    Result r(std::move(diagnostics));
    r.ok_ = false;
    if (r.diagnostics_.empty())
      r.diagnostics_.push_back(
          error_diagnostic("E099", "internal error: a failure without a diagnostic"));
    return r;
  }
  static Result failure(Diagnostic diagnostic) {
    std::vector<Diagnostic> list;
    list.push_back(std::move(diagnostic));
    return failure(std::move(list));
  }
  bool ok() const noexcept { return ok_; }
  explicit operator bool() const noexcept { return ok_; }
  const std::vector<Diagnostic>& diagnostics() const& noexcept { return diagnostics_; }
  std::vector<Diagnostic>&& diagnostics() && noexcept { return std::move(diagnostics_); }
  std::string message() const { return first_message(diagnostics_); }

 private:
  bool ok_ = true;
  std::vector<Diagnostic> diagnostics_;
};

/// A call's outcome without a value.
using Status = Result<void>;

}  // namespace recourse
