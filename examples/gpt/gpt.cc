// gpt: compiles a decoder-only transformer for a cluster layout.
//
//   gpt --nodes=2 --devices_per_node=2 --dp=2 --tp=2 --layers=2 --plan_out=/tmp/gpt.plan
//   oneflow inspect /tmp/gpt.plan
//
// --dp=1 --tp=1 on one device is the single-device reference.
#include <iostream>

#include "absl/flags/flag.h"
#include "examples/common/example_main.h"
#include "examples/gpt/gpt_model.h"
#include "oneflow_core/status.h"

ABSL_FLAG(int64_t, batch, 8, "Sequences per iteration (the logical batch).");
ABSL_FLAG(bool, uneven_batch, false,
          "Compile a --batch that --dp (x --micro_batches) does not divide instead of refusing it (the plan then "
          "boxes activations around every reshape; for tests of uneven splits).");
ABSL_FLAG(int64_t, seq, 64, "Sequence length.");
ABSL_FLAG(int64_t, layers, 2, "Transformer blocks.");
ABSL_FLAG(int64_t, hidden, 128, "Hidden width.");
ABSL_FLAG(int64_t, heads, 4, "Attention heads (must divide --hidden; --tp should divide it).");
ABSL_FLAG(int64_t, vocab, 512, "Vocabulary size.");
ABSL_FLAG(bool, tied, true, "Tie the output projection to the token embedding.");
ABSL_FLAG(bool, vocab_parallel_loss, false,
          "Megatron's vocab-parallel cross-entropy: the logits stay split by vocabulary over --tp "
          "(default false: the whole-row cross-entropy, which gathers the logits on every tp device).");
ABSL_FLAG(std::string, token_file, "", "Little-endian int32 tokens; empty: synthetic tokens.");
ABSL_FLAG(std::string, text_file, "",
          "Train on the bytes of any file (vocabulary 256, next-byte prediction; --vocab is ignored), "
          "e.g. /usr/share/common-licenses/GPL-3.");
ABSL_FLAG(double, lr, 3e-4, "Peak learning rate (AdamW, warmup-cosine).");
ABSL_FLAG(int64_t, adamw_freeze_variance_from, 0,
          "AdamW's second moment v frozen from this step on (1-bit Adam's freeze_step; 0: never). "
          "Error feedback on compressed gradients (--error_feedback) needs it under AdamW, "
          "set to the dense warm-up's end: --compression_warmup=N --adamw_freeze_variance_from=N --error_feedback "
          "(docs/sbp_and_boxing.md, \"Error feedback under a frozen variance\").");
ABSL_FLAG(int64_t, moe_experts, 0, "Mixture of experts: experts per MoE feed-forward (0: dense feed-forwards).");
ABSL_FLAG(int64_t, moe_top_k, 1, "Experts each token is routed to (1: Switch, 2: GShard).");
ABSL_FLAG(int64_t, moe_every, 1, "An MoE feed-forward in every N-th block (1: every block).");
ABSL_FLAG(double, moe_capacity, 1.25,
          "Capacity factor: each expert takes at most ceil(factor x seq x top_k / experts) tokens of a sample.");
ABSL_FLAG(std::string, moe_parallel, "auto",
          "fssdp (experts sharded, only the used ones gathered: sparse boxing), ep (expert parallelism: "
          "tokens all-to-all to the owners), replicated (every expert everywhere), or auto (the cost model).");
ABSL_FLAG(double, moe_aux_weight, 0.01, "Weight of the load-balancing loss.");
ABSL_FLAG(double, moe_zipf_skew, 0, "Benchmarks: a Zipf prior of this exponent on the router's choice (0: none).");

namespace oneflow::examples {
namespace {

absl::Status Main() {
  GptConfig config;
  config.batch = absl::GetFlag(FLAGS_batch);
  config.uneven_batch = absl::GetFlag(FLAGS_uneven_batch);
  config.seq = absl::GetFlag(FLAGS_seq);
  config.layers = absl::GetFlag(FLAGS_layers);
  config.hidden = absl::GetFlag(FLAGS_hidden);
  config.heads = absl::GetFlag(FLAGS_heads);
  config.vocab = absl::GetFlag(FLAGS_vocab);
  config.tied_embeddings = absl::GetFlag(FLAGS_tied);
  config.vocab_parallel_loss = absl::GetFlag(FLAGS_vocab_parallel_loss);
  config.token_file = absl::GetFlag(FLAGS_token_file);
  config.text_file = absl::GetFlag(FLAGS_text_file);
  config.learning_rate = absl::GetFlag(FLAGS_lr);
  config.adamw_freeze_variance_from = absl::GetFlag(FLAGS_adamw_freeze_variance_from);
  config.moe.experts = absl::GetFlag(FLAGS_moe_experts);
  config.moe.top_k = absl::GetFlag(FLAGS_moe_top_k);
  config.moe.every = absl::GetFlag(FLAGS_moe_every);
  config.moe.capacity_factor = absl::GetFlag(FLAGS_moe_capacity);
  OF_ASSIGN_OR_RETURN(config.moe.parallel, ParseMoeParallel(absl::GetFlag(FLAGS_moe_parallel)));
  config.moe.aux_weight = absl::GetFlag(FLAGS_moe_aux_weight);
  config.moe.zipf_skew = absl::GetFlag(FLAGS_moe_zipf_skew);
  const JobBuilder build = [&config](const ParallelLayout& layout) { return BuildGpt(config, layout); };
  if (AutoParallelRequested()) return CompileAndReportAuto(build);
  OF_ASSIGN_OR_RETURN(ParallelLayout layout, LayoutFromFlags());
  if (config.moe.enabled()) {
    const MoeCost cost = ResolveMoeParallel(config, layout);
    std::cerr << "experts: " << MoeParallelName(cost.choice) << " (" << cost.reason << ")\n";
  }
  OF_ASSIGN_OR_RETURN(proto::Job job, BuildGpt(config, layout));
  for (const std::string& warning : GptLayoutWarnings(config, layout)) std::cerr << "gpt: warning: " << warning << "\n";
  return CompileAndReport(job, layout, build);
}

}  // namespace
}  // namespace oneflow::examples

int main(int argc, char** argv) {
  oneflow::examples::ParseExampleFlags(argc, argv, "Compiles a GPT-style transformer to a per-device plan.");
  return oneflow::examples::RunExample("gpt", &oneflow::examples::Main);
}
