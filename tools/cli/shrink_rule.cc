#include "tools/cli/shrink_rule.h"

#include <regex>
#include <set>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"

namespace oneflow::cli {
namespace {

int64_t CeilDiv(int64_t a, int64_t b) { return (a + b - 1) / b; }

// Why dp `dp` cannot be used at all, or "" when it can.
std::string RefusedDp(const ShrinkInputs& in, int64_t dp) {
  if (dp == 1 && in.dp > 1 && (in.tp > 1 || in.cp > 1)) {
    return "dp 1 drops the data-parallel axis of the hierarchy the model's SBP hints were written for";
  }
  if (dp == 1 && in.zero > 0) return absl::StrCat("--zero=", in.zero, " shards over data parallelism and needs dp > 1");
  return "";
}

}  // namespace

absl::StatusOr<ShrinkChoice> ChooseShrinkLayout(const ShrinkInputs& in) {
  const int64_t replica = in.tp * in.cp * in.pp;
  const int64_t surviving_devices = in.survivors * in.devices_per_node;
  const int64_t most = surviving_devices / replica;
  // A device's micro-batch before the loss (the largest part, should the old split have been uneven).
  const int64_t rows_before = CeilDiv(in.batch / in.micro_batches, in.dp);
  std::vector<std::string> refusals;
  std::vector<int64_t> dividing;  // dp counts that split the batch evenly, however many micro-batches
  for (int64_t dp = most; dp >= 1; --dp) {
    const int64_t devices = dp * replica;
    if (devices % in.devices_per_node != 0) continue;  // the layout uses whole nodes
    if (in.batch % dp == 0) dividing.push_back(dp);
    const std::string refused = RefusedDp(in, dp);
    if (!refused.empty()) {
      refusals.push_back(refused);
      continue;
    }
    int64_t chosen_micro_batches = 0;
    if (in.micro_batches_fixed) {
      if (in.batch % (dp * in.micro_batches) == 0) chosen_micro_batches = in.micro_batches;
    } else {
      for (int64_t m = in.micro_batches; dp * m <= in.batch; ++m) {
        if (in.batch % (dp * m) == 0 && in.batch / (dp * m) <= rows_before) {
          chosen_micro_batches = m;
          break;
        }
      }
    }
    if (chosen_micro_batches == 0) continue;
    ShrinkChoice choice;
    choice.dp = dp;
    choice.nodes = devices / in.devices_per_node;
    choice.micro_batches = chosen_micro_batches;
    if (dp != most) {
      const int64_t idle = in.survivors - choice.nodes;
      choice.note = absl::StrCat("the global batch of ", in.batch, " does not split evenly over dp ", most,
                                 in.micro_batches_fixed ? absl::StrCat(" x ", in.micro_batches, " micro-batches") : "",
                                 "; dp ", dp, " is the largest that does", idle > 0 ? absl::StrCat(" (", idle, " of the ", in.survivors, " surviving nodes idle)") : "");
    }
    return choice;
  }
  std::string valid = dividing.empty() ? "none" : absl::StrJoin(dividing, ", ");
  std::set<std::string> reasons(refusals.begin(), refusals.end());
  return absl::FailedPreconditionError(absl::StrCat(
      "the global batch of ", in.batch, " cannot be kept on the ", in.survivors, " surviving nodes x ",
      in.devices_per_node, in.devices_per_node == 1 ? " device" : " devices", " (replicas of --tp=", in.tp, " x --cp=",
      in.cp, " x --pp=", in.pp, ", at most dp ", most, "): ",
      in.micro_batches_fixed ? absl::StrCat("no dp splits it evenly into ", in.micro_batches, " micro-batches")
                             : absl::StrCat("no dp splits it evenly into micro-batches of at most ", rows_before,
                                            " rows per device (the old layout's)"),
      reasons.empty() ? "" : absl::StrCat("; ", absl::StrJoin(reasons, "; ")), "; dp counts up to ", most,
      " that divide the batch: ", valid));
}

std::string ShrinkChoiceText(const ShrinkInputs& in, const ShrinkChoice& choice) {
  const int64_t rows_before = CeilDiv(in.batch / in.micro_batches, in.dp);
  const int64_t rows_after = in.batch / (choice.dp * choice.micro_batches);
  return absl::StrCat("dp ", in.dp, " -> ", choice.dp, ", micro-batches ", in.micro_batches, " -> ",
                      choice.micro_batches, ": global batch ", in.batch, ", ", rows_after,
                      rows_after == 1 ? " row" : " rows", " per device's micro-batch (was ", rows_before, ")");
}

std::string RecutMicroBatchRows(absl::string_view text, int64_t old_rows, int64_t new_rows) {
  // "%name = input f32[8, 4] ..." and "%name = op(args) f32[8, 16] ...": the first type
  // after the arguments is the op's output.
  static const std::regex* input_line = new std::regex(R"(^(%[^ ]+) = input ([a-z0-9]+)\[([0-9]+)(.*)$)");
  static const std::regex* op_line = new std::regex(R"(^(%[^ ]+) = [a-z0-9_]+\((.*?)\) ([a-z0-9]+)\[([0-9]+)(.*)$)");
  static const std::regex* reference = new std::regex(R"(=(%[^,) ]+))");
  const std::string old_text = absl::StrCat(old_rows);
  std::set<std::string> recut;
  std::vector<std::string> lines;
  for (absl::string_view view : absl::StrSplit(text, '\n')) {
    std::string line(view);
    std::smatch match;
    if (std::regex_match(line, match, *input_line)) {
      if (match[3].str() == old_text) {
        recut.insert(match[1].str());
        line = absl::StrCat(match[1].str(), " = input ", match[2].str(), "[", new_rows, match[4].str());
      }
    } else if (std::regex_match(line, match, *op_line) && match[4].str() == old_text) {
      const std::string arguments = match[2].str();
      bool reads_recut = false;
      for (std::sregex_iterator it(arguments.begin(), arguments.end(), *reference), end; it != end; ++it) {
        reads_recut |= recut.count((*it)[1].str()) > 0;
      }
      if (reads_recut) {
        recut.insert(match[1].str());
        const size_t type_at = static_cast<size_t>(match.position(3));
        line = absl::StrCat(line.substr(0, type_at), match[3].str(), "[", new_rows, match[5].str());
      }
    }
    lines.push_back(std::move(line));
  }
  return absl::StrJoin(lines, "\n");
}

}  // namespace oneflow::cli
