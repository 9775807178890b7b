// SBP (split, broadcast, partial) of a tensor over one placement axis, and its N-D form.
//
//   S(axis)  each device holds a balanced slice along `axis` (see balanced_splitter.h);
//   B        each device holds the whole tensor;
//   P        each device holds a whole-shaped tensor and the logical value is their sum
//            (P(max) / P(min) for the other reductions).
// NdSbp has one Sbp per axis of the placement hierarchy and prints as "[S(0), B]"; a
// 1-D NdSbp prints as its only element ("S(0)"). Parse accepts both spellings.
#ifndef ONEFLOW_CORE_SBP_H_
#define ONEFLOW_CORE_SBP_H_

#include <cstdint>
#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "proto/sbp.pb.h"

namespace oneflow {

enum class ReduceOp { kSum, kMax, kMin };

class Sbp {
 public:
  enum class Kind { kSplit, kBroadcast, kPartial };

  static Sbp Split(int64_t axis) { return Sbp(Kind::kSplit, axis, ReduceOp::kSum); }
  static Sbp Broadcast() { return Sbp(Kind::kBroadcast, 0, ReduceOp::kSum); }
  static Sbp Partial(ReduceOp op = ReduceOp::kSum) { return Sbp(Kind::kPartial, 0, op); }

  // Parses "S(0)", "B", "P", "P(sum)", "P(max)", "P(min)" (surrounding spaces allowed).
  static absl::StatusOr<Sbp> Parse(absl::string_view text);
  static absl::StatusOr<Sbp> FromProto(const proto::SbpParallel& proto);

  Kind kind() const { return kind_; }
  bool is_split() const { return kind_ == Kind::kSplit; }
  bool is_broadcast() const { return kind_ == Kind::kBroadcast; }
  bool is_partial() const { return kind_ == Kind::kPartial; }
  // The split axis; meaningful only when is_split().
  int64_t axis() const { return axis_; }
  // The pending reduction; meaningful only when is_partial().
  ReduceOp reduce_op() const { return reduce_op_; }

  // "S(0)", "B", "P", "P(max)", "P(min)".
  std::string ToString() const;
  proto::SbpParallel ToProto() const;

  friend bool operator==(const Sbp& a, const Sbp& b) {
    return a.kind_ == b.kind_ && (!a.is_split() || a.axis_ == b.axis_) &&
           (!a.is_partial() || a.reduce_op_ == b.reduce_op_);
  }
  friend bool operator!=(const Sbp& a, const Sbp& b) { return !(a == b); }

 private:
  Sbp(Kind kind, int64_t axis, ReduceOp op) : kind_(kind), axis_(axis), reduce_op_(op) {}

  Kind kind_;
  int64_t axis_;
  ReduceOp reduce_op_;
};

class NdSbp {
 public:
  NdSbp() = default;
  NdSbp(std::initializer_list<Sbp> sbps) : sbps_(sbps) {}
  explicit NdSbp(std::vector<Sbp> sbps) : sbps_(std::move(sbps)) {}

  // Parses "[S(0), B]" or a single "S(0)". An empty list "[]" is an error.
  static absl::StatusOr<NdSbp> Parse(absl::string_view text);
  static absl::StatusOr<NdSbp> FromProto(const proto::NdSbp& proto);

  int64_t size() const { return static_cast<int64_t>(sbps_.size()); }
  const Sbp& at(int64_t axis) const { return sbps_[axis]; }
  const std::vector<Sbp>& sbps() const { return sbps_; }

  // True when no hierarchy axis is split or partial: every device holds everything.
  bool IsAllBroadcast() const;

  // "[S(0), B]", or "S(0)" for one axis.
  std::string ToString() const;
  proto::NdSbp ToProto() const;

  friend bool operator==(const NdSbp& a, const NdSbp& b) { return a.sbps_ == b.sbps_; }
  friend bool operator!=(const NdSbp& a, const NdSbp& b) { return !(a == b); }

 private:
  std::vector<Sbp> sbps_;
};

}  // namespace oneflow

#endif  // ONEFLOW_CORE_SBP_H_
