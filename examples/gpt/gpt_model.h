// A decoder-only transformer (GPT) on synthetic tokens or a token file, written once
// with the DSL. Parallelism is nothing but SBP hints:
//   data parallel    tokens and targets split by batch over dp
//   tensor parallel  Megatron-style: attention q/k/v column-parallel (S(1)) and the
//                    output projection row-parallel (S(0)); MLP fc S(1), proj S(0); the
//                    token embedding split by vocabulary (S(0)). The compiler inserts
//                    the all-reduces Megatron writes by hand.
#ifndef EXAMPLES_GPT_GPT_MODEL_H_
#define EXAMPLES_GPT_GPT_MODEL_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/statusor.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/moe.h"
#include "proto/job.pb.h"

namespace oneflow::examples {

struct GptConfig {
  int64_t batch = 8;
  int64_t seq = 64;
  int64_t layers = 2;
  int64_t hidden = 128;
  int64_t heads = 4;
  int64_t vocab = 512;
  bool tied_embeddings = true;  // Output projection = token embedding transposed.
  std::string token_file;       // Empty: synthetic tokens.
  // Any file's bytes as tokens (vocabulary 256, next-byte prediction); overrides vocab.
  std::string text_file;
  double learning_rate = 3e-4;
  int64_t warmup_steps = 100;  // Linear warmup, then cosine decay over 10000 steps.
  // AdamW's second moment frozen from this step on (Optimizer::WithFrozenVariance,
  // 1-bit Adam's freeze_step; --adamw_freeze_variance_from). 0: never.
  int64_t adamw_freeze_variance_from = 0;
  uint64_t seed = 1;
  // Compile a batch that does not split evenly over dp (x micro-batches) instead of
  // refusing it (ParallelLayout::CheckEvenDataParallelBatch says why it is refused): the
  // plan trains to the same losses but boxes activations around every reshape. For tests
  // of the compiler's uneven splits (--uneven_batch).
  bool uneven_batch = false;
  // Megatron's vocab-parallel cross-entropy (VocabParallelCrossEntropy): the logits,
  // split by vocabulary over tp like wte (or w_out), stay split into the loss instead of
  // being gathered for SparseSoftmaxCrossEntropy (docs/llama.md, "The loss";
  // --vocab_parallel_loss).
  bool vocab_parallel_loss = false;
  // Mixture of experts in every moe.every-th block's feed-forward (examples/gpt/moe.h).
  MoeConfig moe;
};

// The experts' parallelism BuildGpt uses: config.moe.parallel, or for auto
// ChooseMoeParallel's choice for this layout (with its reason).
// Layouts that compile and train but that Megatron refuses: --tp above --heads or not
// dividing it. Each entry is one warning line naming the flags.
std::vector<std::string> GptLayoutWarnings(const GptConfig& config, const ParallelLayout& layout);

MoeCost ResolveMoeParallel(const GptConfig& config, const ParallelLayout& layout);

absl::StatusOr<proto::Job> BuildGpt(const GptConfig& config, const ParallelLayout& layout);

}  // namespace oneflow::examples

#endif  // EXAMPLES_GPT_GPT_MODEL_H_
