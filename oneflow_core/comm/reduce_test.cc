#include "oneflow_core/comm/reduce.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

std::vector<float> Values(int64_t count, int seed) {
  std::vector<float> values(count);
  for (int64_t i = 0; i < count; ++i)
    values[i] = static_cast<float>((i * 37 + seed * 11) % 101) * 0.37f - 17.0f;
  return values;
}

// 5000 elements cross the 2048-element blocks; sums are compared exactly with a plain
// left-to-right loop.
TEST(ReduceFloatsTest, SumMaxMinInRankOrderAcrossBlocks) {
  const int64_t count = 5000;
  std::vector<std::vector<float>> inputs = {Values(count, 1), Values(count, 2), Values(count, 3)};
  const std::vector<const float*> pointers = {inputs[0].data(), inputs[1].data(), inputs[2].data()};
  for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<float> output(count);
    ReduceFloats(op, pointers, output.data(), count);
    for (int64_t i = 0; i < count; ++i) {
      float want = inputs[0][i];
      for (int r = 1; r < 3; ++r) {
        const float x = inputs[r][i];
        want = op == ReduceOp::kSum   ? want + x
               : op == ReduceOp::kMax ? std::max(want, x)
                                      : std::min(want, x);
      }
      ASSERT_EQ(output[i], want) << "op " << static_cast<int>(op) << " element " << i;
    }
  }
}

// The output may be any of the inputs (in-place all-reduce and reduce-scatter).
TEST(ReduceFloatsTest, OutputMayAliasAnyInput) {
  const int64_t count = 4100;
  for (int alias = 0; alias < 3; ++alias) {
    std::vector<std::vector<float>> inputs = {Values(count, 4), Values(count, 5), Values(count, 6)};
    std::vector<float> want(count);
    for (int64_t i = 0; i < count; ++i) want[i] = inputs[0][i] + inputs[1][i] + inputs[2][i];
    const std::vector<const float*> pointers = {inputs[0].data(), inputs[1].data(),
                                                inputs[2].data()};
    ReduceFloats(ReduceOp::kSum, pointers, inputs[alias].data(), count);
    EXPECT_EQ(inputs[alias], want) << "output aliases input " << alias;
  }
}

TEST(ReduceFloatsTest, OneInputCopiesAndZeroCountDoesNothing) {
  std::vector<float> input = Values(10, 7);
  std::vector<float> output(10, -1.0f);
  const std::vector<const float*> pointers = {input.data()};
  ReduceFloats(ReduceOp::kSum, pointers, output.data(), 10);
  EXPECT_EQ(output, input);
  std::vector<float> untouched(3, 9.0f);
  ReduceFloats(ReduceOp::kSum, pointers, untouched.data(), 0);
  EXPECT_EQ(untouched, std::vector<float>(3, 9.0f));
}

float Apply(ReduceOp op, float a, float b) {
  if (op == ReduceOp::kSum) return a + b;
  return op == ReduceOp::kMax ? std::max(a, b) : std::min(a, b);
}

// Output buffers at every float offset from a cache line (streaming stores need 32-byte
// alignment and start at outputs[0]'s first line: the others may be misaligned against
// it), counts below one step, below the streaming head, and with ragged tails.
TEST(ReduceFloatsToAllTest, EveryOutputGetsTheRankOrderResultAtAnyAlignment) {
  for (ReduceStores stores : {ReduceStores::kCached, ReduceStores::kStreaming}) {
    for (int64_t count : {1, 7, 15, 31, 33, 1000, 4133}) {
      const std::vector<std::vector<float>> inputs = {Values(count, 1), Values(count, 2),
                                                      Values(count, 3)};
      const std::vector<const float*> pointers = {inputs[0].data(), inputs[1].data(),
                                                  inputs[2].data()};
      for (ReduceOp op : {ReduceOp::kSum, ReduceOp::kMax, ReduceOp::kMin}) {
        std::vector<float> want(count);
        for (int64_t i = 0; i < count; ++i) {
          want[i] = Apply(op, Apply(op, inputs[0][i], inputs[1][i]), inputs[2][i]);
        }
        for (int64_t first_offset = 0; first_offset < 16; first_offset += 3) {
          // Three outputs in one 64-byte aligned allocation, each starting `first_offset`,
          // then 1 and 8 floats past a line, with guards around them.
          const int64_t stride = (count + 16 + 15) / 16 * 16;
          std::vector<float> storage(3 * stride + 32, -7.0f);
          float* const guarded = storage.data() + 16;
          const uintptr_t guarded_address = reinterpret_cast<uintptr_t>(guarded);
          float* base = guarded + ((64 - guarded_address % 64) % 64) / sizeof(float);
          const int64_t offsets[] = {first_offset, stride + 1, 2 * stride + 8};
          const std::vector<float*> outputs = {base + offsets[0], base + offsets[1],
                                               base + offsets[2]};
          ReduceFloatsToAll(op, pointers, outputs, count, stores);
          for (int j = 0; j < 3; ++j) {
            for (int64_t i = 0; i < count; ++i) {
              ASSERT_EQ(outputs[j][i], want[i])
                  << "streaming " << (stores == ReduceStores::kStreaming) << " count " << count
                  << " op " << static_cast<int>(op) << " first offset " << first_offset
                  << " output " << j << " element " << i;
            }
            EXPECT_EQ(outputs[j][-1], -7.0f) << "wrote before output " << j;
            EXPECT_EQ(outputs[j][count], -7.0f) << "wrote past output " << j;
          }
        }
      }
    }
  }
}

// In-process all-reduce in place: every rank's output is its input, and the owner of a
// chunk overwrites the chunk in every buffer it reads from.
TEST(ReduceFloatsToAllTest, OutputsMayBeTheInputs) {
  for (ReduceStores stores : {ReduceStores::kCached, ReduceStores::kStreaming}) {
    const int64_t count = 5003;
    std::vector<std::vector<float>> buffers = {Values(count, 4), Values(count, 5),
                                               Values(count, 6)};
    std::vector<float> want(count);
    for (int64_t i = 0; i < count; ++i) want[i] = buffers[0][i] + buffers[1][i] + buffers[2][i];
    const std::vector<const float*> inputs = {buffers[0].data(), buffers[1].data(),
                                              buffers[2].data()};
    // Rank 1's order: its own output first.
    const std::vector<float*> outputs = {buffers[1].data(), buffers[0].data(), buffers[2].data()};
    ReduceFloatsToAll(ReduceOp::kSum, inputs, outputs, count, stores);
    for (int j = 0; j < 3; ++j) EXPECT_EQ(buffers[j], want) << "buffer " << j;
  }
}

TEST(ReduceFloatsTest, MaxAndMinPropagateNaN) {
  const float nan = std::numeric_limits<float>::quiet_NaN();
  const std::vector<float> a = {1.0f, nan};
  const std::vector<float> b = {nan, 2.0f};
  const std::vector<const float*> pointers = {a.data(), b.data()};
  for (ReduceOp op : {ReduceOp::kMax, ReduceOp::kMin}) {
    std::vector<float> output(2);
    ReduceFloats(op, pointers, output.data(), 2);
    EXPECT_TRUE(std::isnan(output[0]));
    EXPECT_TRUE(std::isnan(output[1]));
  }
}

}  // namespace
}  // namespace oneflow
