// Mixture of experts (issue 13, "Benchmarks"): the MoE gpt (examples/gpt/moe.h) with a
// Zipf-skewed router prior (--skew, GptConfig.moe.zipf_skew), fssdp vs ep vs replicated
// (GptConfig.moe.parallel), every device in this process (TrainPlan with node = -1), over
// a sweep of hidden sizes x skews. The cases run in alternating rounds, so a load change
// on the machine touches all of them alike. One JSON line per (hidden, skew, mode):
// {"bench":"moe","setting":"in_process","nodes":1,"devices":4,"experts":..,"hidden":..,
//  "top_k":..,"seq":..,"batch":..,"skew":..,"capacity":..,"mode":"fssdp","step_ms":..,
//  "bytes_per_iter":..,"expert_bytes_per_iter":..,"plan_bytes_per_iter":..,
//  "sparse_planned_bytes":..,"sparse_measured_bytes":..,"ratio_bytes_replicated_over_fssdp":..,
//  "ratio_step_ep_over_fssdp":..,"rule":{..},"final_loss":..}
// then one line per skew with the fssdp/ep crossover over the hidden sizes, measured
// (step time and bytes) and as ChooseMoeParallel models it.
//
// Bytes per iteration are on the wire, summed over the devices: the plan's per-device
// bytes_sent_per_iter summed (exact for ep and replicated, whose collectives are dense);
// for fssdp the plan counts the row-sparse steps at their dense worst case, so their
// planned bytes (CollectiveDef.bytes_per_device x group size of every collective whose
// sparsity is set, which is how the compiler sums bytes_sent_per_iter) are replaced by the
// measured ones: IterationMetrics.sparse.payload_bytes + metadata_bytes (already summed
// over this process's devices), the mean over the post-warm-up iterations of all rounds.
// The plan's boxings split the bytes three ways: dense_model_bytes_per_iter (boxings into
// the optimizer update of a variable that is not an expert: attention, embeddings, norms,
// the router, batched in a gradient bucket), router_bytes_per_iter (boxings into the
// router's softmax: with a skew the compiler reduce-scatters the router logits, the same
// in every mode) and expert_bytes_per_iter, everything else: what the mode moves (the
// experts and their gradients, or the token buffers and routing of ep), measured for the
// sparse steps.
//
// With --plan_file=F (the launch bench, bench/moe/moe_launch_bench.sh): reads that plan
// (any number of nodes), trains it here on every device for --iterations, and prints one
// line with the same byte figures (and "step_ms_in_process"), nothing else.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "absl/strings/str_split.h"
#include "absl/strings/string_view.h"
#include "actors/runtime.h"
#include "compiler/compiler.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "kernels/cpu/blas_core.h"
#include "oneflow_core/status.h"
#include "proto/plan.pb.h"
#include "plan/plan_io.h"

ABSL_FLAG(int64_t, devices, 4, "Devices in the process (dp = devices; the experts are sharded over them).");
ABSL_FLAG(int64_t, experts, 32, "Experts per MoE feed-forward.");
ABSL_FLAG(int64_t, top_k, 1, "Experts per token.");
ABSL_FLAG(double, capacity, 1.25, "Capacity factor.");
ABSL_FLAG(std::string, hidden, "16,32,64,128", "Hidden sizes to sweep (the experts are [hidden, 4 hidden] twice).");
ABSL_FLAG(std::string, skew, "0,0.1,0.3", "Zipf skews of the router prior to sweep (0: uniform prior).");
ABSL_FLAG(int64_t, seq, 128, "Sequence length.");
ABSL_FLAG(int64_t, batch, 32, "Sequences per iteration (split over the devices).");
ABSL_FLAG(int64_t, layers, 1, "Transformer blocks (every one an MoE block).");
ABSL_FLAG(int64_t, heads, 2, "Attention heads (must divide every hidden size).");
ABSL_FLAG(int64_t, vocab, 64, "Vocabulary size.");
ABSL_FLAG(std::string, modes, "fssdp,ep,replicated", "Expert parallelisms to compare.");
ABSL_FLAG(int64_t, iterations, 10, "Iterations per case and round; the first `warmup` are left out.");
ABSL_FLAG(int64_t, warmup, 3, "Warm-up iterations per run (left out of step time and bytes).");
ABSL_FLAG(int64_t, rounds, 3, "Rounds over the cases; a case's step time is the median of its rounds' medians.");
ABSL_FLAG(std::string, plan_file, "", "Measure this plan only (see the header); the sweep flags are ignored.");

namespace oneflow {
namespace {

using examples::MoeParallel;

double Median(std::vector<double> values) {
  if (values.empty()) return 0;
  std::sort(values.begin(), values.end());
  const size_t n = values.size();
  return n % 2 ? values[n / 2] : (values[n / 2 - 1] + values[n / 2]) / 2;
}

template <typename T>
absl::StatusOr<std::vector<T>> ParseList(const std::string& text, const char* flag) {
  std::vector<T> values;
  for (absl::string_view part : absl::StrSplit(text, ',')) {
    T value{};
    bool ok;
    if constexpr (std::is_same_v<T, double>) {
      ok = absl::SimpleAtod(part, &value) && value >= 0;
    } else {
      ok = absl::SimpleAtoi(part, &value) && value >= 1;
    }
    if (!ok) return absl::InvalidArgumentError(absl::StrCat("--", flag, "=", text, ": '", part, "' is not valid"));
    values.push_back(value);
  }
  return values;
}

// What the plan says about bytes, summed over devices, per iteration.
struct PlanBytes {
  int64_t total = 0;           // sum of DevicePlan.bytes_sent_per_iter (sparse steps dense)
  int64_t sparse_planned = 0;  // the row-sparse steps' share of it (BoxingStepDef.sparsity set)
  int64_t sparse_by_collectives = 0;  // the same from the sparse CollectiveDefs (a cross-check)
  int64_t expert = 0;  // the boxings that depend on the mode (see the header), sparse ones dense
  int64_t dense_model = 0;  // gradients of the parameters that are not experts
  int64_t router = 0;       // into the router's softmax
  int sparse_steps = 0;
};

bool IsSparse(const proto::CollectiveDef& c) {
  return c.sparsity().kind() != proto::Sparsity::DENSE || c.kind() == proto::SPARSE_ALL_GATHER ||
         c.kind() == proto::SPARSE_REDUCE_SCATTER || c.kind() == proto::SPARSE_ALL_REDUCE;
}

PlanBytes CountPlanBytes(const proto::Plan& plan) {
  PlanBytes bytes;
  for (const proto::DevicePlan& device : plan.devices()) bytes.total += device.bytes_sent_per_iter();
  std::map<int64_t, const proto::CollectiveDef*> by_id;
  for (const proto::CollectiveDef& c : plan.collectives()) {
    by_id[c.id()] = &c;
    // CountWireBytes (compiler/passes/plan_emission_pass.cc): every member of a
    // collective group sends its bytes_per_device (send/recv aside, none here).
    if (IsSparse(c)) bytes.sparse_by_collectives += c.bytes_per_device() * c.group_size();
  }
  // The router's softmax: a softmax whose output a moe_route reads.
  std::map<std::string, const proto::OpDef*> producer;
  for (const proto::OpDef& op : plan.job().ops()) {
    for (const auto& [arg, tensor] : op.outputs()) producer[tensor] = &op;
  }
  std::set<std::string> router_softmax;
  for (const proto::OpDef& op : plan.job().ops()) {
    if (op.type() != "moe_route") continue;
    for (const auto& [arg, tensor] : op.inputs()) {
      auto it = producer.find(tensor);
      if (it != producer.end() && it->second->type() == "softmax") router_softmax.insert(it->second->name());
    }
  }
  for (const proto::BoxingDef& boxing : plan.boxings()) {
    int64_t sent = 0;
    for (const proto::BoxingStepDef& step : boxing.steps()) {
      auto it = by_id.find(step.collective_id());
      if (step.collective_id() < 0 || it == by_id.end()) continue;
      const int64_t step_bytes = step.bytes_per_device() * it->second->group_size();
      sent += step_bytes;
      if (step.sparsity().kind() != proto::Sparsity::DENSE) {
        bytes.sparse_planned += step_bytes;
        ++bytes.sparse_steps;
      }
    }
    const std::string& consumer = boxing.consumer_op();
    if (consumer.find("_update") != std::string::npos && consumer.find("experts/") == std::string::npos) {
      bytes.dense_model += sent;
    } else if (router_softmax.count(consumer)) {
      bytes.router += sent;
    } else {
      bytes.expert += sent;
    }
  }
  return bytes;
}

struct Run {
  std::vector<double> step_medians;  // one per round
  std::vector<double> sparse_bytes;  // per post-warm-up iteration, all rounds
  std::vector<double> sparse_dense_bytes;
  std::vector<double> rows_sent;
  int64_t sparse_calls = 0, dense_calls = 0;
  double final_loss = 0;
};

absl::Status Train(const proto::Plan& plan, int64_t iterations, int64_t warmup, Run* run) {
  actors::TrainOptions train;
  train.node = -1;
  train.iterations = iterations;
  OF_ASSIGN_OR_RETURN(actors::TrainResult result, actors::TrainPlan(plan, train));
  std::vector<double> steps;
  for (size_t i = warmup; i < result.iterations.size(); ++i) {
    const actors::IterationMetrics& m = result.iterations[i];
    steps.push_back(m.step_ms);
    run->sparse_bytes.push_back(static_cast<double>(m.sparse.payload_bytes + m.sparse.metadata_bytes));
    run->sparse_dense_bytes.push_back(static_cast<double>(m.sparse.dense_bytes));
    run->rows_sent.push_back(static_cast<double>(m.sparse.rows_sent));
    run->sparse_calls += m.sparse.sparse_calls;
    run->dense_calls += m.sparse.dense_calls;
  }
  run->step_medians.push_back(Median(steps));
  if (!result.iterations.empty()) run->final_loss = result.iterations.back().loss;
  return absl::OkStatus();
}

double Mean(const std::vector<double>& values) {
  double sum = 0;
  for (double v : values) sum += v;
  return values.empty() ? 0 : sum / values.size();
}

// Bytes on the wire per iteration, summed over devices (the header's rule).
struct Bytes {
  double total = 0, expert = 0, sparse_measured = 0;
};
Bytes WireBytes(const PlanBytes& plan, const Run& run) {
  Bytes bytes;
  bytes.sparse_measured = plan.sparse_steps ? Mean(run.sparse_bytes) : 0;
  bytes.total = static_cast<double>(plan.total - plan.sparse_planned) + bytes.sparse_measured;
  bytes.expert = static_cast<double>(plan.expert - plan.sparse_planned) + bytes.sparse_measured;
  return bytes;
}

// --plan_file: one plan, measured here.
absl::Status MeasurePlanFile(const std::string& path, int64_t iterations, int64_t warmup) {
  OF_ASSIGN_OR_RETURN(const proto::Plan plan, ReadPlanFile(path));
  const PlanBytes planned = CountPlanBytes(plan);
  Run run;
  OF_RETURN_IF_ERROR(Train(plan, iterations, warmup, &run));
  const Bytes bytes = WireBytes(planned, run);
  std::printf(
      "{\"bench\":\"moe_plan\",\"plan\":\"%s\",\"nodes\":%d,\"devices\":%d,\"step_ms_in_process\":%.3f,"
      "\"bytes_per_iter\":%.0f,\"expert_bytes_per_iter\":%.0f,\"dense_model_bytes_per_iter\":%lld,"
      "\"router_bytes_per_iter\":%lld,\"plan_bytes_per_iter\":%lld,\"sparse_planned_bytes\":%lld,\"sparse_planned_bytes_by_collectives\":%lld,\"sparse_measured_bytes\":%.0f,"
      "\"sparse_calls\":%lld,\"sparse_dense_fallback_calls\":%lld,\"final_loss\":%.5f}\n",
      path.c_str(), static_cast<int>(plan.cluster().num_nodes()), plan.devices_size(), Median(run.step_medians), bytes.total,
      bytes.expert, static_cast<long long>(planned.dense_model), static_cast<long long>(planned.router),
      static_cast<long long>(planned.total), static_cast<long long>(planned.sparse_planned),
      static_cast<long long>(planned.sparse_by_collectives), bytes.sparse_measured, static_cast<long long>(run.sparse_calls),
      static_cast<long long>(run.dense_calls), run.final_loss);
  return absl::OkStatus();
}

struct Case {
  int64_t hidden = 0;
  double skew = 0;
  MoeParallel mode = MoeParallel::kFssdp;
  proto::Plan plan;
  PlanBytes planned;
  examples::MoeCost rule;  // ChooseMoeParallel at the layout's bandwidth (what auto weighs)
  examples::MoeCostInputs rule_inputs;
  Run run;
};

examples::GptConfig GptFor(int64_t hidden, double skew, MoeParallel mode) {
  examples::GptConfig gpt;
  gpt.batch = absl::GetFlag(FLAGS_batch);
  gpt.seq = absl::GetFlag(FLAGS_seq);
  gpt.layers = absl::GetFlag(FLAGS_layers);
  gpt.hidden = hidden;
  gpt.heads = absl::GetFlag(FLAGS_heads);
  gpt.vocab = absl::GetFlag(FLAGS_vocab);
  gpt.moe.experts = absl::GetFlag(FLAGS_experts);
  gpt.moe.top_k = absl::GetFlag(FLAGS_top_k);
  gpt.moe.capacity_factor = absl::GetFlag(FLAGS_capacity);
  gpt.moe.zipf_skew = skew;
  gpt.moe.parallel = mode;
  return gpt;
}

absl::StatusOr<examples::ParallelLayout> Layout() {
  examples::ParallelFlags flags;
  flags.devices_per_node = absl::GetFlag(FLAGS_devices);
  flags.dp = absl::GetFlag(FLAGS_devices);
  return examples::ParallelLayout::Create(flags);
}

absl::Status Compile(Case& c) {
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, Layout());
  const examples::GptConfig gpt = GptFor(c.hidden, c.skew, c.mode);
  OF_ASSIGN_OR_RETURN(proto::Job job, examples::BuildGpt(gpt, layout));
  CompileOptions options;
  options.cluster = layout.cluster();
  OF_ASSIGN_OR_RETURN(c.plan, oneflow::Compile(job, options));
  c.planned = CountPlanBytes(c.plan);
  examples::GptConfig automatic = gpt;
  automatic.moe.parallel = MoeParallel::kAuto;
  c.rule = examples::ResolveMoeParallel(automatic, layout);
  return absl::OkStatus();
}

// The rule's inputs as ResolveMoeParallel fills them (examples/gpt/gpt_model.cc).
examples::MoeCostInputs RuleInputs(int64_t hidden, double skew, double bandwidth) {
  const int64_t dp = absl::GetFlag(FLAGS_devices);
  const examples::GptConfig gpt = GptFor(hidden, skew, MoeParallel::kAuto);
  examples::MoeCostInputs in;
  in.dp = dp;
  in.experts = gpt.moe.experts;
  in.expert_bytes = 2 * hidden * 4 * hidden * 4;
  in.samples_per_device = std::max<int64_t>(1, gpt.batch / dp);
  in.tokens_per_device = in.samples_per_device * gpt.seq;
  in.top_k = gpt.moe.top_k;
  in.capacity = std::max<int64_t>(1, gpt.moe.Capacity(gpt.seq));
  in.hidden = hidden;
  in.routing_skew = skew;
  in.bandwidth = bandwidth;
  return in;
}

// The modelled experts in use per device (the rule's u).
double ModelledExpertsInUse(const examples::MoeCostInputs& in) {
  const double assignments = static_cast<double>(in.tokens_per_device) * in.top_k;
  double norm = 0, used = 0;
  for (int64_t e = 0; e < in.experts; ++e) norm += std::pow(e + 1.0, -in.routing_skew);
  for (int64_t e = 0; e < in.experts; ++e) {
    const double p = std::pow(e + 1.0, -in.routing_skew) / norm;
    used += p >= 1 ? 1.0 : -std::expm1(assignments * std::log1p(-p));
  }
  return used;
}

// The smallest hidden size (1..65536) at which the rule models ep cheaper than fssdp, at
// `bandwidth` (0: bytes only, no call latency).
int64_t RuleCrossoverHidden(double skew, double bandwidth) {
  for (int64_t h = 1; h <= 65536; ++h) {
    examples::MoeCostInputs in = RuleInputs(h, skew, bandwidth > 0 ? bandwidth : 1e9);
    if (bandwidth <= 0) in.latency = 0;
    const examples::MoeCost cost = examples::ChooseMoeParallel(in);
    if (cost.ep < cost.fssdp) return h;
  }
  return -1;
}

std::string Json(double v) { return std::isfinite(v) ? absl::StrFormat("%.4g", v) : "null"; }

absl::Status Main() {
  const int64_t warmup = std::max<int64_t>(absl::GetFlag(FLAGS_warmup), 1);
  const int64_t iterations = std::max<int64_t>(absl::GetFlag(FLAGS_iterations), warmup + 1);
  if (!absl::GetFlag(FLAGS_plan_file).empty()) {
    return MeasurePlanFile(absl::GetFlag(FLAGS_plan_file), iterations, warmup);
  }
  OF_ASSIGN_OR_RETURN(const std::vector<int64_t> hiddens, ParseList<int64_t>(absl::GetFlag(FLAGS_hidden), "hidden"));
  OF_ASSIGN_OR_RETURN(const std::vector<double> skews, ParseList<double>(absl::GetFlag(FLAGS_skew), "skew"));
  std::vector<MoeParallel> modes;
  for (absl::string_view name : absl::StrSplit(absl::GetFlag(FLAGS_modes), ',')) {
    OF_ASSIGN_OR_RETURN(const MoeParallel mode, examples::ParseMoeParallel(name));
    if (mode == MoeParallel::kAuto) return absl::InvalidArgumentError("--modes: auto is not a mode to measure");
    modes.push_back(mode);
  }
  OF_ASSIGN_OR_RETURN(const examples::ParallelLayout layout, Layout());
  const double bandwidth = layout.cluster().intra_node_bandwidth();

  std::vector<Case> cases;
  for (double skew : skews) {
    for (int64_t hidden : hiddens) {
      for (MoeParallel mode : modes) {
        Case c;
        c.hidden = hidden;
        c.skew = skew;
        c.mode = mode;
        OF_RETURN_IF_ERROR(Compile(c));
        c.rule_inputs = RuleInputs(hidden, skew, bandwidth);
        cases.push_back(std::move(c));
      }
    }
  }
  for (int64_t round = 0; round < absl::GetFlag(FLAGS_rounds); ++round) {
    for (Case& c : cases) {
      OF_RETURN_IF_ERROR(Train(c.plan, iterations, warmup, &c.run));
      std::fprintf(stderr, "moe_bench: round %lld skew %g hidden %lld %s: %.1f ms\n", static_cast<long long>(round),
                   c.skew, static_cast<long long>(c.hidden), std::string(MoeParallelName(c.mode)).c_str(),
                   c.run.step_medians.back());
    }
  }
  auto find = [&](double skew, int64_t hidden, MoeParallel mode) -> const Case* {
    for (const Case& c : cases) {
      if (c.skew == skew && c.hidden == hidden && c.mode == mode) return &c;
    }
    return nullptr;
  };
  const examples::GptConfig any = GptFor(hiddens[0], 0, MoeParallel::kAuto);
  const int64_t capacity = any.moe.Capacity(any.seq);
  for (const Case& c : cases) {
    const Bytes bytes = WireBytes(c.planned, c.run);
    const Case* fssdp = find(c.skew, c.hidden, MoeParallel::kFssdp);
    const Case* ep = find(c.skew, c.hidden, MoeParallel::kExpert);
    const Case* replicated = find(c.skew, c.hidden, MoeParallel::kReplicated);
    double bytes_ratio = NAN, expert_bytes_ratio = NAN, step_ratio = NAN;
    if (fssdp && replicated) {
      const Bytes f = WireBytes(fssdp->planned, fssdp->run), r = WireBytes(replicated->planned, replicated->run);
      bytes_ratio = r.total / f.total;
      expert_bytes_ratio = r.expert / f.expert;
    }
    if (fssdp && ep) step_ratio = Median(ep->run.step_medians) / Median(fssdp->run.step_medians);
    std::printf(
        "{\"bench\":\"moe\",\"setting\":\"in_process\",\"nodes\":1,\"devices\":%lld,\"experts\":%lld,"
        "\"hidden\":%lld,\"top_k\":%lld,\"seq\":%lld,\"batch\":%lld,\"skew\":%g,\"capacity\":%lld,\"layers\":%lld,"
        "\"mode\":\"%s\",\"step_ms\":%.2f,\"bytes_per_iter\":%.0f,\"expert_bytes_per_iter\":%.0f,"
        "\"dense_model_bytes_per_iter\":%lld,\"router_bytes_per_iter\":%lld,"
        "\"plan_bytes_per_iter\":%lld,\"sparse_planned_bytes\":%lld,\"sparse_measured_bytes\":%.0f,"
        "\"ratio_bytes_replicated_over_fssdp\":%s,\"ratio_expert_bytes_replicated_over_fssdp\":%s,"
        "\"ratio_step_ep_over_fssdp\":%s,\"sparse_rows_sent\":%.1f,\"sparse_dense_fallback_calls\":%lld,\"rule\":{\"bandwidth\":%.3g,\"fssdp_ms\":%.4f,\"ep_ms\":%.4f,"
        "\"replicated_ms\":%.4f,\"choice\":\"%s\",\"experts_in_use_per_device\":%.1f},\"final_loss\":%.4f}\n",
        static_cast<long long>(absl::GetFlag(FLAGS_devices)), static_cast<long long>(absl::GetFlag(FLAGS_experts)),
        static_cast<long long>(c.hidden), static_cast<long long>(absl::GetFlag(FLAGS_top_k)),
        static_cast<long long>(absl::GetFlag(FLAGS_seq)), static_cast<long long>(absl::GetFlag(FLAGS_batch)), c.skew,
        static_cast<long long>(capacity), static_cast<long long>(absl::GetFlag(FLAGS_layers)),
        std::string(MoeParallelName(c.mode)).c_str(), Median(c.run.step_medians), bytes.total, bytes.expert,
        static_cast<long long>(c.planned.dense_model), static_cast<long long>(c.planned.router),
        static_cast<long long>(c.planned.total), static_cast<long long>(c.planned.sparse_planned),
        bytes.sparse_measured, Json(bytes_ratio).c_str(), Json(expert_bytes_ratio).c_str(), Json(step_ratio).c_str(),
        Mean(c.run.rows_sent), static_cast<long long>(c.run.dense_calls), bandwidth, c.rule.fssdp * 1e3, c.rule.ep * 1e3, c.rule.replicated * 1e3,
        std::string(MoeParallelName(c.rule.choice)).c_str(), ModelledExpertsInUse(c.rule_inputs), c.run.final_loss);
    if (c.planned.sparse_planned != c.planned.sparse_by_collectives) {
      std::fprintf(stderr, "moe_bench: note: sparse planned bytes %lld by collectives, %lld by boxing steps\n",
                   static_cast<long long>(c.planned.sparse_planned), static_cast<long long>(c.planned.sparse_by_collectives));
    }
  }
  // Crossover per skew: over the hidden sizes, where fssdp stops being faster than ep
  // (step time) and stops moving fewer bytes (expert bytes), against the rule.
  for (double skew : skews) {
    std::vector<std::string> step_winner, bytes_winner;
    int64_t step_cross = -1, bytes_cross = -1;
    for (int64_t hidden : hiddens) {
      const Case* f = find(skew, hidden, MoeParallel::kFssdp);
      const Case* e = find(skew, hidden, MoeParallel::kExpert);
      if (!f || !e) continue;
      const bool fssdp_faster = Median(f->run.step_medians) < Median(e->run.step_medians);
      const bool fssdp_fewer = WireBytes(f->planned, f->run).expert < WireBytes(e->planned, e->run).expert;
      step_winner.push_back(absl::StrCat("\"", hidden, "\":\"", fssdp_faster ? "fssdp" : "ep", "\""));
      bytes_winner.push_back(absl::StrCat("\"", hidden, "\":\"", fssdp_fewer ? "fssdp" : "ep", "\""));
      if (!fssdp_faster && step_cross < 0) step_cross = hidden;
      if (!fssdp_fewer && bytes_cross < 0) bytes_cross = hidden;
    }
    const examples::MoeCostInputs in = RuleInputs(hiddens[0], skew, bandwidth);
    const double used = ModelledExpertsInUse(in);
    std::printf(
        "{\"bench\":\"moe\",\"setting\":\"in_process\",\"crossover\":true,\"skew\":%g,\"experts\":%lld,"
        "\"top_k\":%lld,\"tokens_per_device\":%lld,\"faster_by_hidden\":{%s},\"fewer_expert_bytes_by_hidden\":{%s},"
        "\"measured_first_hidden_ep_faster\":%lld,\"measured_first_hidden_ep_fewer_bytes\":%lld,"
        "\"rule_experts_in_use_per_device\":%.1f,\"rule_tokens_k_over_3_2u\":%.1f,"
        "\"rule_first_hidden_ep_fewer_bytes\":%lld,\"rule_first_hidden_ep_cheaper_at_bandwidth\":%lld,"
        "\"rule_bandwidth\":%.3g}\n",
        skew, static_cast<long long>(in.experts), static_cast<long long>(in.top_k),
        static_cast<long long>(in.tokens_per_device), absl::StrJoin(step_winner, ",").c_str(),
        absl::StrJoin(bytes_winner, ",").c_str(), static_cast<long long>(step_cross),
        static_cast<long long>(bytes_cross), used, in.tokens_per_device * in.top_k / (3.2 * used),
        static_cast<long long>(RuleCrossoverHidden(skew, 0)), static_cast<long long>(RuleCrossoverHidden(skew, bandwidth)),
        bandwidth);
  }
  return absl::OkStatus();
}

}  // namespace
}  // namespace oneflow

int main(int argc, char** argv) {
  oneflow::cpu::UseBestBlasCore();  // First: it may restart the program.
  absl::ParseCommandLine(argc, argv);
  const absl::Status status = oneflow::Main();
  if (!status.ok()) {
    std::fprintf(stderr, "moe_bench: %s\n", std::string(status.message()).c_str());
    return 1;
  }
  return 0;
}
