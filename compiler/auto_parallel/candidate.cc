#include "compiler/auto_parallel/candidate.h"

#include <algorithm>
#include <tuple>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "compiler/passes/pipeline_schedule_pass.h"

namespace oneflow::auto_parallel {
namespace {

std::vector<int64_t> Divisors(int64_t n) {
  std::vector<int64_t> divisors;
  for (int64_t d = 1; d <= n; ++d) {
    if (n % d == 0) divisors.push_back(d);
  }
  return divisors;
}

// The balanced cuts leave stage_blocks empty, and the names keep their form from before
// the field ("pp=2" alone); "stage_blocks=3,1" follows pp when the cuts were chosen, or
// with `name_cuts` ("stage_blocks=balanced").
// The schedule likewise: "pp_schedule=zb" when it is ZB-H1 (or with `name_schedule`:
// "pp_schedule=1f1b"), nothing for 1F1B, the form of the names before the field.
// ZeRO-3 keeping forward's gathered parameters likewise: "zero3_regather=false" (or with
// `name_kept`: "zero3_regather=true"), the flag that compiles it.
std::vector<std::pair<std::string, std::string>> Fields(const proto::AutoParallelLayout& layout,
                                                        bool name_cuts = false, bool name_schedule = false,
                                                        bool name_kept = false) {
  std::vector<std::pair<std::string, std::string>> fields = {{"dp", absl::StrCat(layout.dp())},
                                                             {"tp", absl::StrCat(layout.tp())},
                                                             {"pp", absl::StrCat(layout.pp())}};
  if (name_cuts || !layout.stage_blocks().empty()) fields.push_back({"stage_blocks", StageBlocksText(layout)});
  if (name_schedule || layout.schedule() != proto::PIPELINE_SCHEDULE_1F1B) {
    fields.push_back({"pp_schedule", std::string(PipelineScheduleName(layout.schedule()))});
  }
  fields.push_back({"micro_batches", absl::StrCat(layout.micro_batches())});
  fields.push_back({"zero", absl::StrCat(layout.zero())});
  if (name_kept || layout.zero3_kept()) fields.push_back({"zero3_regather", layout.zero3_kept() ? "false" : "true"});
  fields.push_back({"recompute", RecomputeName(layout.recompute())});
  return fields;
}

auto FamilyKey(const proto::AutoParallelLayout& layout) {
  const int recompute = layout.recompute() == proto::RECOMPUTE_FULL        ? 2
                        : layout.recompute() == proto::RECOMPUTE_SELECTIVE ? 1
                                                                           : 0;
  // 1F1B before ZB-H1: the schedule every pipeline framework runs by default.
  const int schedule = layout.schedule() == proto::PIPELINE_SCHEDULE_1F1B ? 0 : 1;
  // Re-gathering before keeping: the stage's bytes before the link's time.
  return std::make_tuple(layout.pp(), layout.tp(), layout.micro_batches(), layout.zero(), layout.zero3_kept(),
                         recompute, schedule);
}

auto Key(const proto::AutoParallelLayout& layout) {
  return std::tuple_cat(FamilyKey(layout), std::make_tuple(!layout.stage_blocks().empty()));
}

}  // namespace

std::string StageBlocksText(const proto::AutoParallelLayout& layout) {
  return layout.stage_blocks().empty() ? "balanced" : absl::StrJoin(layout.stage_blocks(), ",");
}

std::string RecomputeName(proto::RecomputeMode mode) {
  switch (mode) {
    case proto::RECOMPUTE_SELECTIVE:
      return "selective";
    case proto::RECOMPUTE_FULL:
      return "full";
    default:
      return "none";
  }
}

std::string LayoutName(const proto::AutoParallelLayout& layout) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : Fields(layout)) parts.push_back(absl::StrCat(name, "=", value));
  return absl::StrJoin(parts, " ");
}

std::string LayoutFlags(const proto::AutoParallelLayout& layout) {
  std::vector<std::string> parts;
  for (const auto& [name, value] : Fields(layout)) parts.push_back(absl::StrCat("--", name, "=", value));
  return absl::StrJoin(parts, " ");
}

std::string LayoutDifference(const proto::AutoParallelLayout& layout, const proto::AutoParallelLayout& reference) {
  // Name the cuts on both sides when either was chosen ("stage_blocks=balanced" against
  // "stage_blocks=3,1"), so the fields line up.
  const bool name_cuts = !layout.stage_blocks().empty() || !reference.stage_blocks().empty();
  const bool name_schedule = layout.schedule() != reference.schedule();
  const bool name_kept = layout.zero3_kept() != reference.zero3_kept();
  const auto mine = Fields(layout, name_cuts, name_schedule, name_kept);
  const auto theirs = Fields(reference, name_cuts, name_schedule, name_kept);
  std::vector<std::string> parts;
  for (size_t i = 0; i < mine.size(); ++i) {
    if (mine[i].second != theirs[i].second) parts.push_back(absl::StrCat(mine[i].first, "=", mine[i].second));
  }
  return parts.empty() ? LayoutName(layout) : absl::StrJoin(parts, " ");
}

bool SimplerLayout(const proto::AutoParallelLayout& a, const proto::AutoParallelLayout& b) { return Key(a) < Key(b); }

bool SimplerFamily(const proto::AutoParallelLayout& a, const proto::AutoParallelLayout& b) {
  return FamilyKey(a) < FamilyKey(b);
}

std::vector<proto::AutoParallelLayout> EnumerateLayouts(const ModelProfile& profile, int64_t devices,
                                                        int64_t max_micro_batches) {
  std::vector<proto::RecomputeMode> recomputes = {proto::RECOMPUTE_NONE};
  if (profile.has_blocks && profile.has_attention_cores) recomputes.push_back(proto::RECOMPUTE_SELECTIVE);
  if (profile.has_blocks) recomputes.push_back(proto::RECOMPUTE_FULL);
  std::vector<proto::AutoParallelLayout> layouts;
  for (int64_t pp : Divisors(devices)) {
    if (pp > std::max<int64_t>(1, profile.stageable_units)) continue;
    for (int64_t tp : Divisors(devices / pp)) {
      if (tp > 1 && !profile.tp_hinted) continue;
      const int64_t dp = devices / pp / tp;
      if (profile.batch_rows % dp != 0) continue;
      for (int64_t micro_batches : Divisors(profile.batch_rows / dp)) {
        if (micro_batches > max_micro_batches) break;
        // ZeRO 0-3, and 3 again keeping forward's gathered parameters for backward.
        for (int zero = 0; zero <= (dp > 1 ? 4 : 0); ++zero) {
          for (proto::RecomputeMode recompute : recomputes) {
            for (proto::PipelineSchedule schedule : {proto::PIPELINE_SCHEDULE_1F1B, proto::PIPELINE_SCHEDULE_ZB_H1}) {
              // ZB-H1 with pp > 1 and micro-batches. With one micro-batch it runs too (each
              // stage's W beside the stage before's B), but its W inputs then live to the end
              // of the stage's backward in the default slots: planned peaks up to 27% above
              // 1F1B's that the memory model does not price (peak_bench, session 57).
              if (schedule != proto::PIPELINE_SCHEDULE_1F1B && (pp == 1 || micro_batches == 1)) continue;
              proto::AutoParallelLayout layout;
              layout.set_dp(dp);
              layout.set_tp(tp);
              layout.set_pp(pp);
              layout.set_micro_batches(micro_batches);
              layout.set_zero(std::min(zero, 3));
              layout.set_zero3_kept(zero == 4);
              layout.set_recompute(recompute);
              layout.set_schedule(schedule);
              layouts.push_back(layout);
            }
          }
        }
      }
    }
  }
  std::stable_sort(layouts.begin(), layouts.end(), SimplerLayout);
  return layouts;
}

}  // namespace oneflow::auto_parallel
