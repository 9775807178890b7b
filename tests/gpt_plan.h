// The gpt of examples/gpt compiled for a layout as `examples/gpt/gpt` compiles it (its
// default compile settings but for what the test gives), for tests that check a plan's
// shape or train it.
#ifndef TESTS_GPT_PLAN_H_
#define TESTS_GPT_PLAN_H_

#include <cstdint>

#include "examples/common/compile_driver.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"
#include "proto/plan.pb.h"

namespace oneflow::testing {

// `gpt` on the layout of `flags`, compiled with `settings`; any error is a test failure
// and gives an empty plan.
proto::Plan CompileGptPlan(const examples::GptConfig& gpt, const examples::ParallelFlags& flags,
                           const examples::CompileSettings& settings);

// The gpt of bench/auto_parallel/prediction_hosts_bench.sh: 6 blocks, hidden 96, 12 heads,
// seq 32, batch 24, vocab 512.
examples::GptConfig HostsBenchGpt();

// A gpt small enough to train a few iterations in a test across layouts: `layers` blocks,
// hidden 64, 4 heads, seq 8, batch 6, vocab 34, learning rate 0.1.
examples::GptConfig TinyTrainingGpt(int64_t layers);

}  // namespace oneflow::testing

#endif  // TESTS_GPT_PLAN_H_
