#include "examples/gpt/moe.h"

#include <algorithm>
#include <cmath>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "oneflow_core/dsl/ops.h"

namespace oneflow::examples {

absl::string_view MoeParallelName(MoeParallel parallel) {
  switch (parallel) {
    case MoeParallel::kAuto:
      return "auto";
    case MoeParallel::kFssdp:
      return "fssdp";
    case MoeParallel::kExpert:
      return "ep";
    case MoeParallel::kReplicated:
      return "replicated";
  }
  return "?";
}

absl::StatusOr<MoeParallel> ParseMoeParallel(absl::string_view text) {
  for (MoeParallel parallel : {MoeParallel::kAuto, MoeParallel::kFssdp, MoeParallel::kExpert, MoeParallel::kReplicated}) {
    if (MoeParallelName(parallel) == text) return parallel;
  }
  return absl::InvalidArgumentError(
      absl::StrCat("--moe_parallel=", text, " is not one of: fssdp, ep, replicated, auto"));
}

int64_t MoeConfig::Capacity(int64_t seq) const {
  if (experts <= 0) return 0;
  return std::max<int64_t>(1, static_cast<int64_t>(std::ceil(capacity_factor * seq * top_k / experts)));
}

absl::Status CheckMoeConfig(const MoeConfig& config, int64_t dp) {
  if (config.experts < 0) {
    return absl::InvalidArgumentError(absl::StrCat("--moe_experts=", config.experts, " must be >= 0 (0: no experts)"));
  }
  if (!config.enabled()) return absl::OkStatus();
  if (config.top_k < 1 || config.top_k > config.experts) {
    return absl::InvalidArgumentError(absl::StrCat("--moe_top_k=", config.top_k, " must be in 1..--moe_experts=",
                                                   config.experts));
  }
  if (config.every < 1) {
    return absl::InvalidArgumentError(absl::StrCat("--moe_every=", config.every, " must be >= 1"));
  }
  if (!(config.capacity_factor > 0) || !std::isfinite(config.capacity_factor)) {
    return absl::InvalidArgumentError(absl::StrCat("--moe_capacity=", config.capacity_factor,
                                                   " must be > 0 (the capacity factor; 1.25 is usual)"));
  }
  if (config.parallel != MoeParallel::kReplicated && config.parallel != MoeParallel::kAuto && config.experts < dp) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--moe_parallel=", MoeParallelName(config.parallel), " shards the experts over --dp=", dp, ", but --moe_experts=",
        config.experts, " leaves some device without an expert; use at least ", dp,
        " experts (any number >= dp works, unevenly split if need be) or --moe_parallel=replicated"));
  }
  return absl::OkStatus();
}

MoeCost ChooseMoeParallel(const MoeCostInputs& in) {
  MoeCost cost;
  const double p = static_cast<double>(in.dp);
  if (in.dp <= 1) {
    cost.choice = MoeParallel::kReplicated;
    cost.reason = "one data-parallel device: nothing moves, replicated";
    return cost;
  }
  const double share = (p - 1) / p;
  const double all_experts = static_cast<double>(in.experts) * in.expert_bytes;
  cost.replicated = 2 * share * all_experts / in.bandwidth + 2 * in.latency;
  const double buffer = static_cast<double>(in.samples_per_device) * in.experts * in.capacity * in.hidden * 4;
  cost.ep = 4 * share * buffer / in.bandwidth + 4 * in.latency;
  const double assignments = static_cast<double>(in.tokens_per_device) * in.top_k;
  double norm = 0;
  for (int64_t e = 0; e < in.experts; ++e) norm += std::pow(e + 1.0, -in.routing_skew);
  double used = 0;
  for (int64_t e = 0; e < in.experts; ++e) {
    const double probability = std::pow(e + 1.0, -in.routing_skew) / norm;
    used += probability >= 1 ? 1.0 : -std::expm1(assignments * std::log1p(-probability));
  }
  const double masks = 2 * 2 * (p - 1) * std::ceil(in.experts / 8.0);
  cost.fssdp = (2 * share * used * in.expert_bytes + masks) / in.bandwidth + 8 * in.latency;
  cost.choice = MoeParallel::kFssdp;
  double best = cost.fssdp;
  if (cost.ep < best) cost.choice = MoeParallel::kExpert, best = cost.ep;
  if (cost.replicated < best) cost.choice = MoeParallel::kReplicated, best = cost.replicated;
  cost.reason = absl::StrFormat(
      "modelled per MoE layer and iteration at %.3g B/s: fssdp %.3g ms (%.1f of %d experts in use per device), "
      "ep %.3g ms, replicated %.3g ms: %s",
      in.bandwidth, cost.fssdp * 1e3, used, in.experts, cost.ep * 1e3, cost.replicated * 1e3,
      MoeParallelName(cost.choice));
  return cost;
}

Tensor MoeFeedForward(const MoeBuilder& builder, const std::string& prefix, Tensor x, Tensor* aux) {
  const MoeConfig& config = builder.config;
  const Shape& shape = x.shape();
  const int64_t b = shape.dim(0), s = shape.dim(1), h = shape.dim(2);
  const int64_t experts = config.experts, capacity = config.Capacity(s);
  const Sbp broadcast = Sbp::Broadcast();
  Tensor router = builder.variable(prefix + "router", Shape{h, experts}, builder.normal(), builder.sbp(broadcast));
  Tensor logits2d = MatMul(Reshape(x, {b * s, h}), router);
  if (config.zipf_skew > 0) {
    // Expert e's logit gets + skew * log(1 / (e + 1)): a Zipf prior, for benchmarks.
    Tensor one = builder.constant_one(prefix + "router_prior_one");
    std::vector<Tensor> prior;
    for (int64_t e = 0; e < experts; ++e) {
      prior.push_back(ScalarMul(one, -config.zipf_skew * std::log(e + 1.0)));
      prior.back().WithSbp(builder.sbp(broadcast));
    }
    Tensor bias = Concat(prior, 0);
    // Pinned: left free, the SBP search finds partial sums for the tiny prior cheap and
    // then reduce-scatters the logits.
    bias.WithSbp(builder.sbp(broadcast));
    logits2d = BiasAdd(logits2d, bias);
    logits2d.WithSbp(builder.sbp(Sbp::Split(0)));
  }
  Tensor logits = Reshape(logits2d, {b, s, experts});
  Tensor probs = Softmax(logits);
  MoeRouting routing = MoeRoute(probs, config.top_k, capacity);
  // Experts: replicated, or owned by one device each (S(0) over the experts on dp).
  const bool sharded = builder.parallel != MoeParallel::kReplicated;
  const NdSbp expert_sbp = builder.sbp(sharded ? Sbp::Split(0) : broadcast);
  Tensor w1 = builder.variable(prefix + "experts/w1", Shape{experts, h, 4 * h}, builder.normal(), expert_sbp);
  Tensor w2 = builder.variable(prefix + "experts/w2", Shape{experts, 4 * h, h}, builder.normal(), expert_sbp);
  if (builder.parallel == MoeParallel::kFssdp) {
    // Each device reads only the experts its tokens chose: gathered and reduced sparsely.
    w1.WithSparseRows(routing.index);
    w2.WithSparseRows(routing.index);
  }
  const std::string parallel = builder.parallel == MoeParallel::kExpert ? "expert" : "data";
  Tensor buf = MoeDispatch(x, routing.index, routing.slot, experts, capacity);
  Tensor hidden = Gelu(ExpertMatMul(buf, w1, parallel));
  Tensor ybuf = ExpertMatMul(hidden, w2, parallel);
  Tensor y = MoeCombine(ybuf, probs, routing.index, routing.slot);
  Tensor balance = ReduceMean(MoeAuxLoss(probs));
  *aux = aux->valid() ? Add(*aux, balance) : balance;
  return y;
}

}  // namespace oneflow::examples
