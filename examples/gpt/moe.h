// The mixture-of-experts feed-forward of the gpt example (Switch/GShard): a router picks
// top-k experts per token with a capacity per sample and expert, the experts are FFNs
// batched over [samples, experts, capacity, hidden], and the Switch load-balancing loss
// joins the model's loss. How the experts are parallelized is an SBP decision:
//   replicated  every device holds every expert (B); gradients all-reduced dense.
//   ep          expert parallelism: each device owns experts (S(0) over the experts on
//               dp); the token buffers go to the owners and back (all-to-all S(0) <-> S(1)).
//   fssdp       fully sharded sparse data parallelism (Hecate): each device owns experts
//               and their optimizer state (S(0)), computes its own tokens, and receives
//               only the experts its tokens use (a row-sparse all-gather) and sends back
//               only their gradients (a row-sparse reduce-scatter): Tensor::WithSparseRows
//               on the expert weights, listed by the router's choices.
//   auto        the cheapest by ChooseMoeParallel's model.
// docs/moe.md has the ops and the rule.
#ifndef EXAMPLES_GPT_MOE_H_
#define EXAMPLES_GPT_MOE_H_

#include <cstdint>
#include <functional>
#include <string>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "oneflow_core/dsl/graph.h"

namespace oneflow::examples {

enum class MoeParallel { kAuto, kFssdp, kExpert, kReplicated };

// "auto", "fssdp", "ep", "replicated"; parsing errors name the flag and the valid values.
absl::string_view MoeParallelName(MoeParallel parallel);
absl::StatusOr<MoeParallel> ParseMoeParallel(absl::string_view text);

struct MoeConfig {
  int64_t experts = 0;  // 0: dense FFNs everywhere
  int64_t top_k = 1;
  int64_t every = 1;  // an MoE FFN in blocks every-1, 2*every-1, ...: every N-th block
  double capacity_factor = 1.25;
  MoeParallel parallel = MoeParallel::kAuto;
  double aux_weight = 0.01;  // of the mean load-balancing loss added to the loss
  // Router skew for benchmarks: the router's logits get + skew * log(1 / (e + 1)), a Zipf
  // prior over the experts (0: none).
  double zipf_skew = 0;

  bool enabled() const { return experts > 0; }
  bool IsMoeBlock(int64_t block) const { return enabled() && (block + 1) % every == 0; }
  // Per sample and expert: ceil(capacity_factor * seq * top_k / experts), at least 1.
  int64_t Capacity(int64_t seq) const;
};

// Errors name the flags: --moe_top_k=3 > --moe_experts=2, ...
absl::Status CheckMoeConfig(const MoeConfig& config, int64_t dp);

// What the auto rule weighs: per device and iteration, bytes / bandwidth + calls x latency.
struct MoeCostInputs {
  int64_t dp = 1;               // devices over which experts are sharded / tokens split
  int64_t experts = 1;
  int64_t expert_bytes = 0;     // one expert's parameters (both matrices), bytes
  int64_t tokens_per_device = 0;  // samples per device x seq
  int64_t top_k = 1;
  int64_t capacity = 1;         // per sample and expert
  int64_t hidden = 1;
  int64_t samples_per_device = 1;
  double bandwidth = 1.25e9;    // bytes/s of the dp links
  double latency = 50e-6;       // seconds per collective call
  // The routing the model expects: expert e (0-based) is chosen with probability
  // proportional to (e + 1)^-routing_skew (0: uniform), --moe_zipf_skew's prior.
  double routing_skew = 0;
};
struct MoeCost {
  double replicated = 0, ep = 0, fssdp = 0;  // modelled seconds per iteration and MoE layer
  MoeParallel choice = MoeParallel::kFssdp;
  std::string reason;  // one line for the compile log
};
// replicated: the gradient all-reduce of every expert, 2 (P-1)/P x E x |e|, 2 calls;
// ep: 4 all-to-alls of the token buffers (dispatch and combine, forward and backward),
//     each (P-1)/P x samples x E x C x H x 4 bytes; 4 calls;
// fssdp: a sparse gather and a sparse reduce-scatter of the experts a device's tokens
//     use, 2 (P-1)/P x u x |e| with u = sum_e 1 - (1 - p_e)^(tokens x k) the expected
//     experts in use (p_e the routing's probabilities: E (1 - (1 - 1/E)^(tokens x k))
//     when uniform), plus their row masks; 8 calls (2 weights, each a mask exchange and
//     a payload exchange forward and backward).
// fssdp beats ep roughly when tokens x k / u > 3.2 H (experts small next to the tokens
// routed to them) and replicated only when u < E (a skewed or sparse routing).
// The cheapest wins; ties go to fssdp, then ep. With dp = 1 all are free: replicated.
MoeCost ChooseMoeParallel(const MoeCostInputs& inputs);

// The MoE feed-forward of block `prefix`: y [b, s, h] for x [b, s, h]; adds the block's
// mean load-balancing loss to *aux. `variable` makes a variable on the block's stage
// with the given name, shape, initializer and SBP; `sbp(data_axis)` an N-D SBP that is
// `data_axis` on dp and B on tp.
struct MoeBuilder {
  const MoeConfig& config;
  MoeParallel parallel;  // resolved, not kAuto
  std::function<Tensor(const std::string&, Shape, Initializer, const NdSbp&)> variable;
  std::function<NdSbp(const Sbp&)> sbp;
  std::function<Initializer()> normal;
  // A non-trainable variable [1] holding 1 on the block's stage (for the Zipf prior).
  std::function<Tensor(const std::string&)> constant_one;
};
Tensor MoeFeedForward(const MoeBuilder& builder, const std::string& prefix, Tensor x, Tensor* aux);

}  // namespace oneflow::examples

#endif  // EXAMPLES_GPT_MOE_H_
