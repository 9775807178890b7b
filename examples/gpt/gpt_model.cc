#include "examples/gpt/gpt_model.h"

#include <filesystem>
#include <fstream>

#include "absl/strings/str_cat.h"
#include "examples/common/context_parallel.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

namespace oneflow::examples {
namespace {

absl::Status CheckConfig(const GptConfig& config) {
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"batch", config.batch},
                                    {"seq", config.seq},
                                    {"layers", config.layers},
                                    {"hidden", config.hidden},
                                    {"heads", config.heads},
                                    {"vocab", config.vocab}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, "=", value, " must be >= 1"));
    }
  }
  if (!config.text_file.empty() && !config.token_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--text_file=", config.text_file, " and --token_file=",
                                                   config.token_file, " both name the data; give one"));
  }
  // A directory or a device is left to ResolveDataFiles (compile_driver.h), which names it.
  if (!config.text_file.empty() && std::filesystem::is_regular_file(config.text_file)) {
    std::ifstream file(config.text_file, std::ios::binary | std::ios::ate);
    if (!file) return absl::InvalidArgumentError(absl::StrCat("--text_file=", config.text_file, ": cannot open it"));
    const std::streamoff bytes = file.tellg();
    if (bytes < config.seq + 1) {
      return absl::InvalidArgumentError(absl::StrCat("--text_file=", config.text_file, " has ", bytes,
                                                     " bytes, fewer than one window of --seq + 1 = ", config.seq + 1));
    }
  }
  OF_RETURN_IF_ERROR(CheckMoeConfig(config.moe, 1));
  if (config.hidden % config.heads != 0) {
    return absl::InvalidArgumentError(absl::StrCat("--hidden=", config.hidden,
                                                   " is not divisible by --heads=", config.heads));
  }
  return absl::OkStatus();
}

// x [b, s, h] . w [h, n] as a matmul over the flattened rows.
Tensor Linear(Tensor x, Tensor w) {
  // A copy: x.shape() refers into the graph's tensors, which the ops below may reallocate.
  const Shape shape = x.shape();
  const int64_t rows = shape.dim(0) * shape.dim(1);
  Tensor y = MatMul(Reshape(x, {rows, shape.dim(2)}), w);
  return Reshape(y, {shape.dim(0), shape.dim(1), w.shape().dim(1)});
}

}  // namespace

std::vector<std::string> GptLayoutWarnings(const GptConfig& config, const ParallelLayout& layout) {
  // Megatron gives each tensor-parallel device whole heads, as many as every other; the
  // compiler also handles a split head (boxing between the attention matmuls), so these
  // layouts train, to the same losses, just with traffic Megatron's avoids.
  const int64_t tp = layout.tp();
  if (tp > config.heads) {
    return {absl::StrCat("--tp=", tp, " is more than --heads=", config.heads,
                         ": heads are split across tensor-parallel devices, so attention needs boxings that "
                         "whole heads per device avoid (Megatron refuses this layout); use a --tp that divides --heads")};
  }
  if (config.heads % tp != 0) {
    return {absl::StrCat("--heads=", config.heads, " is not divisible by --tp=", tp,
                         ": heads are split across tensor-parallel devices, so attention needs boxings that "
                         "whole heads per device avoid (Megatron refuses this layout); use a --tp that divides --heads")};
  }
  return {};
}

MoeCost ResolveMoeParallel(const GptConfig& config, const ParallelLayout& layout) {
  MoeCostInputs inputs;
  inputs.dp = layout.dp();
  inputs.experts = std::max<int64_t>(1, config.moe.experts);
  inputs.expert_bytes = 2 * config.hidden * 4 * config.hidden * 4;
  inputs.samples_per_device = std::max<int64_t>(1, config.batch / std::max<int64_t>(1, layout.dp()));
  inputs.tokens_per_device = inputs.samples_per_device * config.seq;
  inputs.top_k = config.moe.top_k;
  inputs.capacity = std::max<int64_t>(1, config.moe.Capacity(config.seq));
  inputs.hidden = config.hidden;
  inputs.routing_skew = config.moe.zipf_skew;
  const proto::Cluster& cluster = layout.cluster();
  const double bandwidth = cluster.num_nodes() > 1 ? cluster.inter_node_bandwidth() : cluster.intra_node_bandwidth();
  if (bandwidth > 0) inputs.bandwidth = bandwidth;
  MoeCost cost = ChooseMoeParallel(inputs);
  if (config.moe.parallel != MoeParallel::kAuto) {
    cost.choice = config.moe.parallel;
    cost.reason = absl::StrCat("--moe_parallel=", MoeParallelName(cost.choice));
  }
  return cost;
}

absl::StatusOr<proto::Job> BuildGpt(const GptConfig& config, const ParallelLayout& layout) {
  absl::Status valid = CheckConfig(config);
  if (!valid.ok()) return valid;
  OF_RETURN_IF_ERROR(layout.CheckStages(config.layers, "layers"));
  OF_RETURN_IF_ERROR(CheckMoeConfig(config.moe, layout.dp()));
  if (config.moe.enabled() && layout.cp() > 1) {
    return absl::InvalidArgumentError(absl::StrCat("--moe_experts=", config.moe.experts, " with --cp=", layout.cp(),
                                                   ": mixture-of-experts blocks do not run context-parallel yet"));
  }
  // The graph is one micro-batch's (all of the batch without micro-batches).
  OF_ASSIGN_OR_RETURN(const int64_t b, layout.MicroBatchRows(config.batch));
  if (!config.uneven_batch) OF_RETURN_IF_ERROR(layout.CheckEvenDataParallelBatch(config.batch, "uneven_batch"));
  OF_ASSIGN_OR_RETURN(const CpAttention cp_attention,
                      ResolveCpAttention({b, config.seq, config.hidden, config.heads, config.heads, "heads"}, layout));
  // Context parallelism (examples/common/context_parallel.h): the residual stream
  // sequence-first [s, b, h], positions over cp; attention by Ulysses' all-to-alls or ring.
  // (--cp_attention=ring on one device takes this path too: its attention is one ring
  // step, the blockwise kernel.)
  const bool context_parallel = layout.cp() > 1 || cp_attention == CpAttention::kRing;
  const Sbp split0 = Sbp::Split(0);
  const Sbp split1 = Sbp::Split(1);
  const Sbp broadcast = Sbp::Broadcast();
  const NdSbp replicated = layout.Sbp(broadcast, broadcast);
  const NdSbp column = layout.Sbp(broadcast, split1);
  const NdSbp row = layout.Sbp(broadcast, split0);
  const int64_t s = config.seq, h = config.hidden, v = config.text_file.empty() ? config.vocab : 256;
  uint64_t seed = config.seed * 1000;

  Graph graph("gpt");
  graph.SetDefaultPlacement(layout.placement());
  graph.SetBatchSize(config.batch);
  graph.SetMicroBatches(layout.micro_batches());
  graph.AddDataSource("data", !config.text_file.empty()    ? DataSource::TextFile(config.text_file)
                              : !config.token_file.empty() ? DataSource::TokenFile(config.token_file)
                                                           : DataSource::SyntheticTokens(config.seed, config.vocab));
  // Ring attention's zig-zag split: the tokens, the targets and the position embedding
  // reordered once (ZigZagSequence), positions and the loss staying functions of the
  // logical token index. Integers and a replicated weight: no activation's gradient
  // passes through the reorder, and whole tokens per cp device make it local.
  const bool zigzag = UsesZigZag(cp_attention, layout);
  auto sequence_order = [&](Tensor t, int64_t axis, const NdSbp& whole, const NdSbp& positions) {
    return zigzag ? ZigZagSequence(t, axis, layout.cp(), whole, positions) : t;
  };
  const NdSbp whole_tokens = layout.Sbp(split0, broadcast, broadcast);
  const NdSbp token_positions = layout.Sbp(split0, broadcast, split1);
  Tensor tokens = graph.Input("tokens", Shape{b, s}, DType::kI32, "data");
  tokens.WithSbp(layout.Sbp(split0, broadcast, zigzag ? broadcast : split1));
  Tensor targets = graph.Input("targets", Shape{b, s}, DType::kI32, "data");
  targets.WithSbp(layout.Sbp(split0, broadcast, zigzag ? broadcast : split1));
  auto residual = [&](Tensor x) {
    if (context_parallel && x.valid()) x.WithSbp(SequenceSplit(layout));
    return x;
  };

  // Pipeline stages: blocks on consecutive stages (ParallelLayout::StageOf), the
  // embeddings on the first, the final norm and the loss on the last; each variable lives
  // on its block's stage and the activations move between stages through To().
  int64_t stage = 0;
  auto variable = [&](const std::string& name, Shape shape, Initializer init, const NdSbp& sbp) {
    Tensor t = graph.Variable(name, shape, init);
    t.WithSbp(sbp);
    if (layout.pp() > 1) t.WithPlacement(layout.StagePlacement(stage));
    return t;
  };
  auto enter_stage = [&](Tensor x, int64_t next) {
    if (next == stage) return x;
    stage = next;
    return To(x, layout.StagePlacement(stage), context_parallel ? SequenceSplit(layout) : layout.Sbp(split0, broadcast));
  };
  auto normal = [&]() { return Initializer::Normal(0, 0.02, ++seed); };
  MoeBuilder moe{config.moe, ResolveMoeParallel(config, layout).choice,
                 [&](const std::string& name, Shape shape, Initializer init, const NdSbp& sbp) {
                   return variable(name, std::move(shape), init, sbp);
                 },
                 [&](const Sbp& data_axis) { return layout.Sbp(data_axis, broadcast); }, normal,
                 [&](const std::string& name) {
                   Tensor one = graph.Variable(name, Shape{1}, Initializer::Ones(), DType::kF32, /*trainable=*/false);
                   one.WithSbp(replicated);
                   if (layout.pp() > 1) one.WithPlacement(layout.StagePlacement(stage));
                   return one;
                 }};
  Tensor balance;  // The blocks' load-balancing losses, summed.
  Tensor wte = variable("wte", Shape{v, h}, normal(), row);  // Vocabulary-parallel.
  Tensor wpe = variable("wpe", Shape{s, h}, normal(), replicated);
  Tensor x = context_parallel ? residual(SequenceFirst(
                                    Add(Embedding(wte, sequence_order(tokens, 1, whole_tokens, token_positions)),
                                        sequence_order(wpe, 0, replicated, layout.Sbp(broadcast, broadcast, split0))),
                                    layout))
                              : Add(Embedding(wte, tokens), wpe);
  for (int64_t l = 0; l < config.layers; ++l) {
    x = enter_stage(x, layout.StageOf(l, config.layers));
    const std::string p = absl::StrCat("block", l, "/");
    // The block's ops (not the stage transfer above): what --recompute=full re-runs.
    Graph::BlockScope block(graph, absl::StrCat("block", l));
    Tensor ln1_g = variable(p + "ln1/gamma", Shape{h}, Initializer::Ones(), replicated);
    Tensor ln1_b = variable(p + "ln1/beta", Shape{h}, Initializer::Zeros(), replicated);
    Tensor w_q = variable(p + "attn/w_q", Shape{h, h}, normal(), column);
    Tensor w_k = variable(p + "attn/w_k", Shape{h, h}, normal(), column);
    Tensor w_v = variable(p + "attn/w_v", Shape{h, h}, normal(), column);
    Tensor w_o = variable(p + "attn/w_o", Shape{h, h}, normal(), row);
    Tensor normed = LayerNorm(x, ln1_g, ln1_b);
    x = residual(Add(x, context_parallel ? ContextParallelAttention(cp_attention, normed, w_q, w_k, w_v, w_o, config.heads,
                                                                    config.heads, std::nullopt, layout)
                                         : CausalSelfAttention(normed, w_q, w_k, w_v, w_o, config.heads)));
    Tensor ln2_g = variable(p + "ln2/gamma", Shape{h}, Initializer::Ones(), replicated);
    Tensor ln2_b = variable(p + "ln2/beta", Shape{h}, Initializer::Zeros(), replicated);
    if (config.moe.IsMoeBlock(l)) {
      x = Add(x, MoeFeedForward(moe, p + "moe/", LayerNorm(x, ln2_g, ln2_b), &balance));
      continue;
    }
    Tensor w_fc = variable(p + "mlp/w_fc", Shape{h, 4 * h}, normal(), column);
    Tensor w_proj = variable(p + "mlp/w_proj", Shape{4 * h, h}, normal(), row);
    Tensor fc = Linear(LayerNorm(x, ln2_g, ln2_b), w_fc);
    // Under cp the MLP's hidden [s, b, 4h] stays on its positions in both passes (columns
    // over tp, Megatron's), else the backward makes the rows' gradient a partial sum.
    if (context_parallel) fc = Pinned(fc, layout.Sbp(split0, Sbp::Split(2), split0));
    x = residual(Add(x, Linear(Gelu(fc), w_proj)));
  }
  x = enter_stage(x, layout.pp() - 1);
  Tensor lnf_g = variable("ln_f/gamma", Shape{h}, Initializer::Ones(), replicated);
  Tensor lnf_b = variable("ln_f/beta", Shape{h}, Initializer::Zeros(), replicated);
  Tensor final_x = Reshape(LayerNorm(x, lnf_g, lnf_b), {b * s, h});
  // Vocab-parallel (docs/llama.md, "The loss"): rows gathered over tp into the output
  // projection, the logits split by vocabulary, the loss's per-row parts P over tp.
  if (config.vocab_parallel_loss) final_x.WithSbp(layout.Sbp(split0, broadcast, split0));
  Tensor logits;
  if (config.tied_embeddings) {
    logits = MatMul(final_x, wte, /*transpose_a=*/false, /*transpose_b=*/true);
  } else {
    Tensor w_out = variable("w_out", Shape{h, v}, normal(), column);
    logits = MatMul(final_x, w_out);
  }
  // Under cp the logits' rows are position-major, and so must the targets be.
  Tensor target_rows = Reshape(context_parallel ? SequenceFirst(sequence_order(targets, 1, whole_tokens, token_positions), layout) : targets, {b * s});
  if (config.vocab_parallel_loss) logits.WithSbp(layout.Sbp(split0, split1, split0));
  Tensor loss = ReduceMean(config.vocab_parallel_loss ? VocabParallelCrossEntropy(logits, target_rows,
                                                                                  layout.Sbp(split0, Sbp::Partial(), split0))
                                                      : SparseSoftmaxCrossEntropy(logits, target_rows));
  if (balance.valid()) loss = Add(loss, ScalarMul(balance, config.moe.aux_weight));
  graph.SetLoss(loss);
  graph.SetOptimizer(Optimizer::AdamW(config.learning_rate)
                         .WithWarmupCosine(config.warmup_steps, 10000, 0.1 * config.learning_rate)
                         .WithZero(layout.zero(), layout.dp_axis())
                         .WithFrozenVariance(config.adamw_freeze_variance_from));
  return graph.Build();
}

}  // namespace oneflow::examples
