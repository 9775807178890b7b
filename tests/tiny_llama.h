// The tiny llama the training tests compile for many layouts: 2 blocks, hidden 32, 4 query
// heads over 2 kv heads, ffn 48, vocabulary 32, batch 4 x 8 positions; AdamW peak 1e-2
// after a 5-step warm-up makes the loss fall within 20 iterations.
#ifndef TESTS_TINY_LLAMA_H_
#define TESTS_TINY_LLAMA_H_

#include "examples/llama/llama_model.h"

namespace oneflow::testing {

inline examples::LlamaConfig TinyLlama() {
  examples::LlamaConfig config;
  config.batch = 4;
  config.seq = 8;
  config.layers = 2;
  config.hidden = 32;
  config.heads = 4;
  config.kv_heads = 2;
  config.ffn_hidden = 48;
  config.vocab = 32;
  config.learning_rate = 1e-2;
  config.warmup_steps = 5;
  return config;
}

}  // namespace oneflow::testing

#endif  // TESTS_TINY_LLAMA_H_
