// The small gpts the auto-parallel tests price and compile, and the profile of one.
#ifndef TESTS_AUTO_PARALLEL_TESTING_H_
#define TESTS_AUTO_PARALLEL_TESTING_H_

#include "compiler/auto_parallel/model_profile.h"
#include "examples/common/parallel_layout.h"
#include "examples/gpt/gpt_model.h"

namespace oneflow {

// 3 blocks, hidden 32, seq 16, batch 8: compiled fast enough for a test to compile every
// family of layouts (the act-count and host-term tests).
examples::GptConfig TinyGpt();

// 2 blocks, hidden 128, seq 32, batch 8: gradients and activations large enough that a
// slow link makes a codec pay (the codec-pricing tests).
examples::GptConfig SmallGpt();

// The probe layout: tp = 2 on two devices.
examples::ParallelLayout TwoDeviceTpLayout();

// `config` built for the probe layout; a failure fails the test.
proto::Job TwoDeviceTpGpt(const examples::GptConfig& config);

// `config` built for the probe layout and profiled; a failure fails the test.
auto_parallel::ModelProfile ProfileOfTwoDevices(const examples::GptConfig& config);

}  // namespace oneflow

#endif  // TESTS_AUTO_PARALLEL_TESTING_H_
