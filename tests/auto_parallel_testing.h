// The small gpts the auto-parallel tests price and compile, and the profile of one.
#ifndef TESTS_AUTO_PARALLEL_TESTING_H_
#define TESTS_AUTO_PARALLEL_TESTING_H_

#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/price.h"
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

// Two nodes of one device each joined by a link of `inter_node_bytes_per_second` without
// latency, GEMMs at `flops_per_second` and memory-bound work at `memory_bytes_per_second`.
auto_parallel::PriceOptions TwoNodesOfOneDevice(double inter_node_bytes_per_second, double flops_per_second,
                                                double memory_bytes_per_second);

// dp x tp x pp with `micro_batches`, no ZeRO, no recomputation.
proto::AutoParallelLayout LayoutOf(int64_t dp, int64_t tp, int64_t pp, int64_t micro_batches);

}  // namespace oneflow

#endif  // TESTS_AUTO_PARALLEL_TESTING_H_
