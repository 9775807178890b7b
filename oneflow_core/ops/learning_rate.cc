#include "oneflow_core/ops/learning_rate.h"

#include <algorithm>
#include <cmath>
#include <string>

#include "absl/strings/str_cat.h"

namespace oneflow {
namespace {

std::string ScheduleName(const AttrMap& attrs) {
  auto it = attrs.find("lr_schedule");
  if (it == attrs.end()) return "constant";
  const auto* name = std::get_if<std::string>(&it->second);
  return name ? *name : "";
}

}  // namespace

AttrMap LearningRateAttrs(const proto::LearningRateSchedule& schedule) {
  AttrMap attrs;
  attrs["base_lr"] = schedule.base_lr();
  if (schedule.kind() == proto::LearningRateSchedule::WARMUP_COSINE) {
    attrs["lr_schedule"] = std::string("warmup_cosine");
    attrs["warmup_steps"] = schedule.warmup_steps();
    attrs["total_steps"] = schedule.total_steps();
    attrs["min_lr"] = schedule.min_lr();
  } else {
    attrs["lr_schedule"] = std::string("constant");
  }
  return attrs;
}

absl::Status CheckLearningRateAttrs(const AttrMap& attrs) {
  const std::string schedule = ScheduleName(attrs);
  const double base_lr = GetFloatAttr(attrs, "base_lr", 0.0);
  if (schedule != "constant" && schedule != "warmup_cosine") {
    return absl::InvalidArgumentError(absl::StrCat(
        "attribute lr_schedule=\"", schedule, "\" is unknown; valid: \"constant\", \"warmup_cosine\""));
  }
  if (!(base_lr >= 0) || std::isinf(base_lr)) {
    return absl::InvalidArgumentError(
        absl::StrCat("attribute base_lr=", base_lr, " must be finite and >= 0"));
  }
  if (schedule == "constant") return absl::OkStatus();
  const int64_t warmup = GetIntAttr(attrs, "warmup_steps", 0);
  const int64_t total = GetIntAttr(attrs, "total_steps", 0);
  const double min_lr = GetFloatAttr(attrs, "min_lr", 0.0);
  if (warmup < 0 || total < warmup || total <= 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "attributes warmup_steps=", warmup, " total_steps=", total,
        " are invalid for lr_schedule=\"warmup_cosine\"; valid: 0 <= warmup_steps <= total_steps, "
        "total_steps > 0"));
  }
  if (!(min_lr >= 0 && min_lr <= base_lr)) {
    return absl::InvalidArgumentError(absl::StrCat("attribute min_lr=", min_lr,
                                                   " must be in [0, base_lr=", base_lr, "]"));
  }
  return absl::OkStatus();
}

double LearningRateAt(const AttrMap& attrs, int64_t step) {
  const double base_lr = GetFloatAttr(attrs, "base_lr", 0.0);
  if (ScheduleName(attrs) != "warmup_cosine") return base_lr;
  const int64_t warmup = GetIntAttr(attrs, "warmup_steps", 0);
  const int64_t total = GetIntAttr(attrs, "total_steps", 0);
  const double min_lr = GetFloatAttr(attrs, "min_lr", 0.0);
  if (step < warmup) return base_lr * static_cast<double>(step + 1) / static_cast<double>(warmup);
  const double progress =
      total > warmup ? std::min(1.0, static_cast<double>(step - warmup) / (total - warmup)) : 1.0;
  return min_lr + (base_lr - min_lr) * 0.5 * (1.0 + std::cos(M_PI * progress));
}

}  // namespace oneflow
