// The small gpt the compression tests train (the model of bench/compression:
// error_feedback_bench: 2 blocks, hidden 64, 4 heads, seq 16, vocab 64, batch 8): large
// enough that int4's error shows in the loss, small enough for a test of 100-200 iterations.
#ifndef TESTS_CODEC_GPT_H_
#define TESTS_CODEC_GPT_H_

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

}  // namespace oneflow::testing

#endif  // TESTS_CODEC_GPT_H_
