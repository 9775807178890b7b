// Error handling for the whole project: absl::Status / absl::StatusOr end to end.
//
// Anything that can fail because of user input (a model, a flag, a file, a peer) returns
// absl::Status or absl::StatusOr<T>; CHECK is reserved for programmer bugs. Propagation
// uses exactly one macro family, defined here:
//
//   absl::StatusOr<Plan> Compile(const Job& job) {
//     OF_RETURN_IF_ERROR(Validate(job));
//     OF_ASSIGN_OR_RETURN(Graph graph, BuildGraph(job));
//     ...
//   }
//
// Canonical codes carry meaning that the launcher maps straight onto gRPC status codes:
// INVALID_ARGUMENT for a bad model/flag/file, NOT_FOUND for a missing name,
// FAILED_PRECONDITION for a valid request in the wrong state, DEADLINE_EXCEEDED for a
// timed-out wait, UNAVAILABLE for a dead peer, INTERNAL for a broken invariant.
#ifndef ONEFLOW_CORE_STATUS_H_
#define ONEFLOW_CORE_STATUS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"

namespace oneflow {

// Returns `status` with "context: " put in front of its message, keeping its code.
// OK stays OK. Use it to say what was being done when a lower layer failed:
//   return WithContext(ParseSbp(text), absl::StrCat("tensor 'x' sbp_hint"));
absl::Status WithContext(const absl::Status& status, absl::string_view context);

}  // namespace oneflow

#define OF_STATUS_CONCAT_INNER_(a, b) a##b
#define OF_STATUS_CONCAT_(a, b) OF_STATUS_CONCAT_INNER_(a, b)

// Evaluates `expr` (an absl::Status); returns it from the enclosing function if not OK.
#define OF_RETURN_IF_ERROR(expr)                                  \
  do {                                                            \
    const ::absl::Status of_status_ = (expr);                     \
    if (ABSL_PREDICT_FALSE(!of_status_.ok())) return of_status_;  \
  } while (0)

// Evaluates `rexpr` (an absl::StatusOr<T>); on error returns its status from the
// enclosing function, otherwise moves the value into `lhs`, which may be a declaration:
//   OF_ASSIGN_OR_RETURN(Shape shape, Shape::Parse(text));
#define OF_ASSIGN_OR_RETURN(lhs, rexpr) \
  OF_ASSIGN_OR_RETURN_IMPL_(OF_STATUS_CONCAT_(of_statusor_, __LINE__), lhs, rexpr)

#define OF_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, rexpr)             \
  auto statusor = (rexpr);                                          \
  if (ABSL_PREDICT_FALSE(!statusor.ok())) return statusor.status(); \
  lhs = std::move(statusor).value()

#endif  // ONEFLOW_CORE_STATUS_H_
