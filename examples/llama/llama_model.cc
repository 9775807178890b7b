#include "examples/llama/llama_model.h"

#include <utility>
#include <vector>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"
#include "examples/common/context_parallel.h"
#include "oneflow_core/dsl/ops.h"
#include "oneflow_core/status.h"

namespace oneflow::examples {
namespace {

// x [b, s, h] . w [h, n] as a matmul over the flattened rows [b * s, h], those hinted
// `rows` and the product `product`.
Tensor Linear(Tensor x, Tensor w, const NdSbp& rows, const NdSbp& product) {
  // A copy: x.shape() refers into the graph's tensors, which the ops below may reallocate.
  const Shape shape = x.shape();
  Tensor flat = Reshape(x, {shape.dim(0) * shape.dim(1), shape.dim(2)});
  if (flat.valid()) flat.WithSbp(rows);
  Tensor y = MatMul(flat, w);
  if (y.valid()) y.WithSbp(product);
  return Reshape(y, {shape.dim(0), shape.dim(1), w.shape().dim(1)});
}

}  // namespace

int64_t LlamaConfig::FfnHidden() const {
  if (ffn_hidden > 0) return ffn_hidden;
  const int64_t two_thirds = (2 * 4 * hidden + 2) / 3;
  return (two_thirds + 31) / 32 * 32;
}

absl::Status CheckLlamaConfig(const LlamaConfig& config) {
  for (const auto& [name, value] : {std::pair<const char*, int64_t>{"batch", config.batch},
                                    {"seq", config.seq},
                                    {"layers", config.layers},
                                    {"hidden", config.hidden},
                                    {"heads", config.heads},
                                    {"kv_heads", config.kv_heads},
                                    {"vocab", config.vocab}}) {
    if (value < 1) {
      return absl::InvalidArgumentError(absl::StrCat("--", name, "=", value, " must be >= 1"));
    }
  }
  if (config.ffn_hidden < 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--ffn_hidden=", config.ffn_hidden, " must be >= 1 (or 0: 2/3 of 4 x --hidden, rounded up to 32)"));
  }
  if (config.hidden % config.heads != 0) {
    return absl::InvalidArgumentError(
        absl::StrCat("--hidden=", config.hidden, " is not divisible by --heads=", config.heads));
  }
  if ((config.hidden / config.heads) % 2 != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "--hidden=", config.hidden, " / --heads=", config.heads, " = ", config.hidden / config.heads,
        " dimensions per head must be even (rotary embeddings turn them in pairs)"));
  }
  if (config.heads % config.kv_heads != 0) {
    std::vector<int64_t> valid;
    for (int64_t k = 1; k <= config.heads; ++k) {
      if (config.heads % k == 0) valid.push_back(k);
    }
    return absl::InvalidArgumentError(absl::StrCat("--kv_heads=", config.kv_heads, " does not divide --heads=",
                                                   config.heads, "; valid --kv_heads: ", absl::StrJoin(valid, ", ")));
  }
  if (!config.text_file.empty() && !config.token_file.empty()) {
    return absl::InvalidArgumentError(absl::StrCat("--text_file=", config.text_file, " and --token_file=",
                                                   config.token_file, " both name the data; give one"));
  }
  return absl::OkStatus();
}

absl::StatusOr<proto::Job> BuildLlama(const LlamaConfig& config, const ParallelLayout& layout) {
  OF_RETURN_IF_ERROR(CheckLlamaConfig(config));
  OF_RETURN_IF_ERROR(layout.CheckStages(config.layers, "layers"));
  // The graph is one micro-batch's (all of the batch without micro-batches).
  OF_ASSIGN_OR_RETURN(const int64_t b, layout.MicroBatchRows(config.batch));
  AttentionShape attention_shape{b, config.seq, config.hidden, config.heads, config.kv_heads, "kv_heads"};
  OF_ASSIGN_OR_RETURN(const CpAttention cp_attention, ResolveCpAttention(attention_shape, layout));
  // Context parallelism (examples/common/context_parallel.h): the residual stream
  // sequence-first [s, b, h], positions over cp, rows [s * b, h] S(0) over cp.
  // (--cp_attention=ring on one device takes this path too: its attention is one ring
  // step, the blockwise kernel.)
  const bool context_parallel = layout.cp() > 1 || cp_attention == CpAttention::kRing;
  const Sbp split0 = Sbp::Split(0);
  const Sbp split1 = Sbp::Split(1);
  const Sbp broadcast = Sbp::Broadcast();
  const NdSbp replicated = layout.Sbp(broadcast, broadcast);
  const NdSbp column = layout.Sbp(broadcast, split1);
  const NdSbp row = layout.Sbp(broadcast, split0);
  // k and v by kv head where the tensor-parallel devices divide them (Megatron's layout);
  // otherwise every device computes all of them (a kv head cannot be shared out).
  const NdSbp kv = config.kv_heads % layout.tp() == 0 ? column : replicated;
  // The residual stream [b, s, h]: batch over dp, positions over tp (sequence parallelism).
  const NdSbp sequence_parallel = context_parallel ? SequenceSplit(layout) : layout.Sbp(split0, split1);
  // Products over the flattened rows [b * s, n]: rows over dp; column-parallel ones split
  // by columns over tp, row-parallel ones partial sums over tp (Megatron's layout; the
  // cost model alone prefers gathering the weights when tokens outnumber hidden units).
  // (Under cp the rows are [s * b] and split S(0) over cp; with dp, the batch groups
  // stacked outside the positions, S(0) over dp as well: SequenceFirst.)
  const NdSbp gathered = layout.Sbp(split0, broadcast, split0);
  const NdSbp column_product = layout.Sbp(split0, split1, split0);
  const NdSbp row_product = layout.Sbp(split0, Sbp::Partial(), split0);
  AttentionHints attention_hints;
  attention_hints.rows = gathered;
  attention_hints.query = column_product;
  attention_hints.key_value = config.kv_heads % layout.tp() == 0 ? column_product : layout.Sbp(split0, broadcast);
  // Whole heads per device, as Megatron, when tp divides kv_heads (then also heads);
  // otherwise the compiler places the attention core around the replicated k and v.
  if (config.kv_heads % layout.tp() == 0) {
    attention_hints.heads = layout.Sbp(split0, split1);
    attention_hints.context = column_product;
  }
  attention_hints.output = row_product;
  const int64_t s = config.seq, h = config.hidden, f = config.FfnHidden();
  const int64_t v = config.text_file.empty() ? config.vocab : 256;
  const int64_t head_dim = h / config.heads;
  uint64_t seed = config.seed * 1000;

  Graph graph("llama");
  graph.SetDefaultPlacement(layout.placement());
  graph.SetBatchSize(config.batch);
  graph.SetMicroBatches(layout.micro_batches());
  graph.AddDataSource("data", !config.text_file.empty()    ? DataSource::TextFile(config.text_file)
                              : !config.token_file.empty() ? DataSource::TokenFile(config.token_file)
                                                           : DataSource::SyntheticTokens(config.seed, config.vocab));
  // Ring attention's zig-zag split: the tokens and the targets reordered once
  // (ZigZagSequence); the rotary angles and the mask read logical positions. Integers
  // without a gradient, whole per cp device: the reorder is local in both passes.
  const bool zigzag = UsesZigZag(cp_attention, layout);
  auto sequence_order = [&](Tensor t) {
    return zigzag ? ZigZagSequence(t, 1, layout.cp(), layout.Sbp(split0, broadcast, broadcast),
                                   layout.Sbp(split0, broadcast, split1))
                  : t;
  };
  Tensor tokens = graph.Input("tokens", Shape{b, s}, DType::kI32, "data");
  tokens.WithSbp(layout.Sbp(split0, broadcast, zigzag ? broadcast : split1));
  Tensor targets = graph.Input("targets", Shape{b, s}, DType::kI32, "data");
  targets.WithSbp(layout.Sbp(split0, broadcast, zigzag ? broadcast : split1));

  // Pipeline stages as in examples/gpt: blocks on consecutive stages, the embedding on the
  // first, the final norm and the loss on the last; activations move through To().
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
    return To(x, layout.StagePlacement(stage), sequence_parallel);
  };
  // Sequence parallelism's two boxings, by hints: the residual stream S(1) over tp (a
  // row-parallel product, P over tp, arrives by reduce-scatter), and a normalized
  // activation whole over tp where the column-parallel products read it (`gathered`,
  // flattened rows B over tp: an all-gather), as Megatron's g-bar and g.
  auto residual = [&](Tensor x) {
    x.WithSbp(sequence_parallel);
    return x;
  };
  auto normal = [&]() { return Initializer::Normal(0, 0.02, ++seed); };

  Tensor embedding = variable("tok_embeddings", Shape{v, h}, normal(), row);  // Stored split by vocabulary.
  Tensor x = Embedding(embedding, sequence_order(tokens));
  if (context_parallel) x = SequenceFirst(x, layout);  // [s, b, h]; [dp * s, b / dp, h] under dp
  x = residual(x);
  for (int64_t l = 0; l < config.layers; ++l) {
    x = enter_stage(x, layout.StageOf(l, config.layers));
    const std::string p = absl::StrCat("layers", l, "/");
    // The block's ops (not the stage transfer above): what --recompute=full re-runs.
    Graph::BlockScope block(graph, absl::StrCat("layers", l));
    Tensor attention_norm = variable(p + "attention_norm", Shape{h}, Initializer::Ones(), replicated);
    Tensor w_q = variable(p + "attention/wq", Shape{h, config.heads * head_dim}, normal(), column);
    Tensor w_k = variable(p + "attention/wk", Shape{h, config.kv_heads * head_dim}, normal(), kv);
    Tensor w_v = variable(p + "attention/wv", Shape{h, config.kv_heads * head_dim}, normal(), kv);
    Tensor w_o = variable(p + "attention/wo", Shape{config.heads * head_dim, h}, normal(), row);
    Tensor attention =
        context_parallel
            ? ContextParallelAttention(cp_attention, RmsNorm(x, attention_norm, config.norm_epsilon), w_q, w_k, w_v,
                                       w_o, config.heads, config.kv_heads, config.rope_base, layout)
            : GroupedQueryAttention(RmsNorm(x, attention_norm, config.norm_epsilon), w_q, w_k, w_v, w_o,
                                    config.heads, config.kv_heads, config.rope_base, attention_hints);
    x = residual(Add(x, attention));
    Tensor ffn_norm = variable(p + "ffn_norm", Shape{h}, Initializer::Ones(), replicated);
    Tensor w_gate = variable(p + "feed_forward/w1", Shape{h, f}, normal(), column);
    Tensor w_up = variable(p + "feed_forward/w3", Shape{h, f}, normal(), column);
    Tensor w_down = variable(p + "feed_forward/w2", Shape{f, h}, normal(), row);
    Tensor normed = RmsNorm(x, ffn_norm, config.norm_epsilon);
    Tensor gated = SwiGlu(Linear(normed, w_gate, gathered, column_product), Linear(normed, w_up, gathered, column_product));
    x = residual(Add(x, Linear(gated, w_down, column_product, row_product)));
  }
  x = enter_stage(x, layout.pp() - 1);
  Tensor final_norm = variable("norm", Shape{h}, Initializer::Ones(), replicated);
  Tensor output = variable("output", Shape{h, v}, normal(), column);  // Untied; stored split by vocabulary.
  Tensor normalized = Reshape(RmsNorm(x, final_norm, config.norm_epsilon), {b * s, h});
  // Vocab-parallel: the output projection column-parallel as Megatron's (normalized rows
  // gathered over tp, the logits split by vocabulary) into a loss that keeps them split,
  // its per-row parts partial sums over tp (docs/llama.md, "The loss").
  if (config.vocab_parallel_loss) normalized.WithSbp(gathered);
  Tensor logits = MatMul(normalized, output);
  // Under cp the logits' rows are position-major, and so must the targets be.
  Tensor target_rows = Reshape(context_parallel ? SequenceFirst(sequence_order(targets), layout) : targets, {b * s});
  if (config.vocab_parallel_loss) logits.WithSbp(column_product);
  Tensor loss = ReduceMean(config.vocab_parallel_loss ? VocabParallelCrossEntropy(logits, target_rows, row_product)
                                                      : SparseSoftmaxCrossEntropy(logits, target_rows));
  graph.SetLoss(loss);
  graph.SetOptimizer(Optimizer::AdamW(config.learning_rate)
                         .WithWarmupCosine(config.warmup_steps, 10000, 0.1 * config.learning_rate)
                         .WithZero(layout.zero(), layout.dp_axis())
                         .WithFrozenVariance(config.adamw_freeze_variance_from));
  return graph.Build();
}

}  // namespace oneflow::examples
