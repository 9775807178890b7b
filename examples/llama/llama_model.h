// A Llama-class decoder (docs/llama.md) on synthetic tokens, a token file or any file's
// bytes, written once with the DSL: RMSNorm before attention and feed-forward, rotary
// position embeddings, causal grouped-query attention (--kv_heads query-head groups share
// one key/value head), a SwiGLU feed-forward, untied input and output embeddings.
//
// Parallelism is nothing but SBP hints:
//   data parallel      tokens and targets split by batch over dp
//   tensor parallel    Megatron's: q/k/v and gate/up column-parallel (S(1)), o and down
//                      row-parallel (S(0)); k/v split by kv head when tp divides
//                      kv_heads, replicated otherwise; the input embedding split by
//                      vocabulary (S(0)), the output projection by vocabulary (S(1)).
//   sequence parallel  the residual stream [b, s, h] S(1) (positions) over tp: the norms
//                      and residual adds run on 1/tp of the positions, and the compiler's
//                      boxing turns Megatron's tp all-reduces into a reduce-scatter (the
//                      row-parallel outputs, P -> S(1)) and an all-gather (before the
//                      column-parallel matmuls, S(1) -> B).
#ifndef EXAMPLES_LLAMA_LLAMA_MODEL_H_
#define EXAMPLES_LLAMA_LLAMA_MODEL_H_

#include <cstdint>
#include <string>

#include "absl/status/statusor.h"
#include "examples/common/parallel_layout.h"
#include "proto/job.pb.h"

namespace oneflow::examples {

struct LlamaConfig {
  int64_t batch = 8;
  int64_t seq = 64;
  int64_t layers = 2;
  int64_t hidden = 128;
  int64_t heads = 4;
  int64_t kv_heads = 2;    // Must divide heads; heads: multi-head attention.
  int64_t ffn_hidden = 0;  // SwiGLU's inner width; 0: Llama's rule (FfnHidden).
  int64_t vocab = 512;
  double rope_base = 10000.0;
  double norm_epsilon = 1e-5;
  std::string token_file;  // Empty: synthetic tokens.
  // Any file's bytes as tokens (vocabulary 256, next-byte prediction); overrides vocab.
  std::string text_file;
  double learning_rate = 3e-4;
  int64_t warmup_steps = 100;  // Linear warmup, then cosine decay over 10000 steps.
  // AdamW's second moment frozen from this step on (Optimizer::WithFrozenVariance,
  // 1-bit Adam's freeze_step; --adamw_freeze_variance_from). 0: never.
  int64_t adamw_freeze_variance_from = 0;
  uint64_t seed = 1;
  // Megatron's vocab-parallel cross-entropy (VocabParallelCrossEntropy): the logits stay
  // split by vocabulary over tp into the loss. false: SparseSoftmaxCrossEntropy, which
  // needs whole rows, so the compiler gathers the [b * s, vocab] logits on every tp device.
  bool vocab_parallel_loss = true;

  // ffn_hidden, or when 0 Llama's rule: 2/3 of 4 x hidden rounded up to a multiple of 32.
  int64_t FfnHidden() const;
};

// Errors name the flag and what is valid: "--kv_heads=3 does not divide --heads=4; valid
// --kv_heads: 1, 2, 4".
absl::Status CheckLlamaConfig(const LlamaConfig& config);

absl::StatusOr<proto::Job> BuildLlama(const LlamaConfig& config, const ParallelLayout& layout);

}  // namespace oneflow::examples

#endif  // EXAMPLES_LLAMA_LLAMA_MODEL_H_
