// The small gpt the compression tests train (the model of bench/compression:
// error_feedback_bench: 2 blocks, hidden 64, 4 heads, seq 16, vocab 64, batch 8): large
// enough that int4's error shows in the loss, small enough for a test of 100-200 iterations.
#ifndef TESTS_CODEC_GPT_H_
#define TESTS_CODEC_GPT_H_

#include <cstdint>

#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"

namespace oneflow::testing {

// The model's shape only; each test sets its optimizer's learning rate and warm-up.
inline examples::GptConfig CodecTestGpt() {
  examples::GptConfig config;
  config.batch = 8;
  config.seq = 16;
  config.layers = 2;
  config.hidden = 64;
  config.heads = 4;
  config.vocab = 64;
  return config;
}

// CodecTestGpt under bench/compression:error_feedback_bench's default optimizer: AdamW at
// learning rate 1e-2 with 5 warm-up steps.
inline examples::GptConfig AdamWCodecTestGpt() {
  examples::GptConfig config = CodecTestGpt();
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  return config;
}

// The smaller gpt of the tests that resume a compressed run (error feedback, stochastic
// rounding; tests/actors/checkpoint_test.cc's model): 2 blocks, hidden 32, seq 16, batch 4,
// with a warm-up short enough that the learning rate changes across the resume.
inline examples::GptConfig ResumeTestGpt() {
  examples::GptConfig config;
  config.batch = 4;
  config.seq = 16;
  config.hidden = 32;
  config.heads = 4;
  config.vocab = 64;
  config.learning_rate = 3e-3;
  config.warmup_steps = 3;
  return config;
}

// dp=2 x tp=2 over `nodes` nodes of `devices_per_node` devices (2 x 2: the dp axis crosses
// the nodes, so its reductions take the inter-node codecs).
inline examples::ParallelLayout Dp2Tp2(int64_t nodes, int64_t devices_per_node) {
  examples::ParallelFlags flags;
  flags.nodes = nodes;
  flags.devices_per_node = devices_per_node;
  flags.dp = 2;
  flags.tp = 2;
  return *examples::ParallelLayout::Create(flags);
}

}  // namespace oneflow::testing

#endif  // TESTS_CODEC_GPT_H_
