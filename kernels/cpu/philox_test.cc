// PhiloxBlocks and KeepThreshold against oneflow_core's LogicalRandom, which the
// reference's dropout uses: the same bits for every block, seed and stream, the same
// keep decisions for every rate; and the dropout kernels against LogicalRandom's
// BulkUniform on slices starting and ending anywhere in a block.
#include "kernels/cpu/philox.h"

#include <random>
#include <vector>

#include "gtest/gtest.h"
#include "kernels/cpu/kernel_testing.h"
#include "oneflow_core/ops/reference/reference.h"
#include "oneflow_core/random.h"
#include "oneflow_core/tensor_slice.h"

namespace oneflow {
namespace cpu {
namespace {

const uint64_t kSeeds[] = {0, 9, 0x123456789ABCDEF0};
const uint64_t kStreams[] = {0, 3, (uint64_t{1} << 40) | 7};

TEST(PhiloxTest, BlocksAreLogicalRandomsBits) {
  std::mt19937_64 rng(11);
  std::vector<int64_t> blocks;
  for (int64_t i = 0; i < 1024; ++i) blocks.push_back(i);
  for (int64_t i = -64; i < 64; ++i) blocks.push_back((int64_t{1} << 32) + i);  // Carry.
  for (int i = 0; i < 1024; ++i) blocks.push_back(static_cast<int64_t>(rng() >> 3));
  for (uint64_t seed : kSeeds) {
    for (uint64_t stream : kStreams) {
      const LogicalRandom reference(seed, stream);
      const PhiloxBlocks philox(seed, stream);
      for (int64_t block : blocks) {
        ASSERT_EQ(philox(static_cast<uint64_t>(block)), reference.Bits(block))
            << "seed " << seed << " stream " << stream << " block " << block;
        for (int64_t k = 0; k < 4; ++k) {
          const int64_t index = 4 * block + k;
          ASSERT_EQ(static_cast<float>(philox.Word(static_cast<uint64_t>(index)) >> 8) /
                        16777216.0f,
                    reference.BulkUniform(index))
              << "seed " << seed << " stream " << stream << " index " << index;
        }
      }
    }
  }
}

#if defined(__AVX2__)
#if defined(OF_AVX512_CODE)
// Blocks512 inlined into a function compiled for AVX-512 (as the kernel calls it).
template <int kGroups>
OF_TARGET_AVX512 void Blocks512Of(const PhiloxBlocks& philox, uint64_t first, __m256i* vectors) {
  philox.Blocks512<kGroups>(first, vectors);
}
#endif

// Blocks<kGroups>() (and Blocks512, where the CPU has AVX-512) is operator() on
// 4 * kGroups consecutive blocks, in element order: below 2^32 blocks (lane-uniform rounds
// precomputed), across 2^32 and above (the general rounds).
template <int kGroups, bool kAvx512>
void ExpectBlocksAreOneByOne() {
#if defined(OF_AVX512_CODE)
  if (kAvx512 && !CpuHasAvx512()) GTEST_SKIP() << "no AVX-512 on this CPU";
#else
  if (kAvx512) GTEST_SKIP() << "no AVX-512 code in this build";
#endif
  std::mt19937_64 rng(12);
  std::vector<uint64_t> firsts;
  for (uint64_t i = 0; i < 256; ++i) firsts.push_back(i);
  for (int64_t i = -32; i < 4; ++i) firsts.push_back((uint64_t{1} << 32) + i);  // Carry.
  for (int i = 0; i < 256; ++i) firsts.push_back(rng() >> 3);
  for (int i = 0; i < 256; ++i) firsts.push_back(rng() >> 34);  // Below 2^32 blocks.
  for (uint64_t seed : kSeeds) {
    for (uint64_t stream : kStreams) {
      const PhiloxBlocks philox(seed, stream);
      for (uint64_t first : firsts) {
        __m256i vectors[2 * kGroups];
        if constexpr (kAvx512) {
#if defined(OF_AVX512_CODE)
          Blocks512Of<kGroups>(philox, first, vectors);
#endif
        } else {
          philox.Blocks<kGroups>(first, vectors);
        }
        uint32_t words[8 * kGroups];
        std::memcpy(words, vectors, sizeof(words));
        for (int k = 0; k < 8 * kGroups; ++k) {
          ASSERT_EQ(words[k], philox(first + k / 4)[k % 4])
              << "seed " << seed << " stream " << stream << " block " << first + k / 4 << " word "
              << k % 4 << " groups " << kGroups << " avx512 " << kAvx512;
        }
      }
    }
  }
}

TEST(PhiloxTest, BlocksAtATimeAreOneByOne) {
  ExpectBlocksAreOneByOne<1, false>();
  ExpectBlocksAreOneByOne<2, false>();
  ExpectBlocksAreOneByOne<3, false>();
}

TEST(PhiloxTest, Blocks512AreOneByOne) {
  ExpectBlocksAreOneByOne<1, true>();
  ExpectBlocksAreOneByOne<4, true>();
  ExpectBlocksAreOneByOne<6, true>();
}
#endif

const double kRates[] = {0.0, 3.0 / 16777216.0,     0.1,        0.25, 0.4,
                         0.5, 1 - 1.0 / 16777216.0, 0.999999999};

TEST(PhiloxTest, KeepThresholdDecidesAsBulkUniformAgainstRate) {
  const LogicalRandom reference(5, 2);
  const PhiloxBlocks philox(5, 2);
  for (double rate : kRates) {
    const uint32_t threshold = KeepThreshold(rate);
    int kept = 0;
    for (int64_t i = 0; i < 20000; ++i) {
      const bool keep = (philox.Word(static_cast<uint64_t>(i)) >> 8) >= threshold;
      ASSERT_EQ(keep, static_cast<double>(reference.BulkUniform(i)) >= rate)
          << "rate " << rate << " index " << i;
      kept += keep;
    }
    EXPECT_NEAR(kept / 20000.0, 1 - rate, 0.02) << rate;
  }
}

// The kernel's output on `slice` of `logical`: exactly x * float(1 / (1 - rate)) where
// BulkUniform(logical index) >= rate, else 0, and zero exactly where the reference's is.
void ExpectDropoutOnSlice(const std::string& op, const Shape& logical, const TensorSlice& slice,
                          double rate, int64_t seed, int64_t step) {
  const Shape shape = slice.shape();
  Dense x = Dense::Zeros(shape);
  for (int64_t i = 0; i < shape.NumElements(); ++i) x.values[i] = 1.0 + 0.25 * (i % 7);
  const AttrMap attrs = {{"rate", rate}, {"seed", seed}};
  ReferenceContext context;
  context.inputs = {TensorLayout{logical, slice}};
  context.outputs = {TensorLayout{logical, slice}};
  context.step = step;
  const absl::StatusOr<std::vector<Dense>> got = RunCpuKernel(op, {x}, attrs, context);
  ASSERT_TRUE(got.ok()) << got.status();
  const absl::StatusOr<std::vector<Dense>> want = EvaluateReference(op, {x}, attrs, context);
  ASSERT_TRUE(want.ok()) << want.status();
  const LogicalRandom random(static_cast<uint64_t>(seed), static_cast<uint64_t>(step));
  const float scale = static_cast<float>(1.0 / (1.0 - rate));
  for (int64_t i = 0; i < shape.NumElements(); ++i) {
    std::vector<int64_t> at = Unravel(i, shape);
    for (int64_t axis = 0; axis < shape.rank(); ++axis) at[axis] += slice.range(axis).begin;
    const int64_t index = Ravel(at, logical);
    const bool keep = static_cast<double>(random.BulkUniform(index)) >= rate;
    const float expected = keep ? static_cast<float>(x.values[i]) * scale : 0.0f;
    ASSERT_EQ(static_cast<float>((*got)[0].values[i]), expected)
        << op << " rate " << rate << " slice " << slice.ToString() << " of "
        << logical.ToString() << " logical index " << index;
    ASSERT_EQ((*want)[0].values[i] == 0.0, !keep) << op << " logical index " << index;
  }
}

// Runs starting at every offset in a block (0..7 covers two blocks of each vector step's
// pair) and of every length up to past two AVX-512 steps (96 elements each) and the
// partial step after them, so the scalar head, whole steps and the partial last step all
// meet every alignment. (philox_avx2_test runs these on the AVX2 code.)
TEST(PhiloxTest, DropoutKernelsMatchBulkUniformOnEverySlice) {
  for (const char* op : {"dropout", "dropout_grad"}) {
    for (double rate : kRates) {
      for (int64_t begin = 0; begin < 8; ++begin) {
        for (int64_t length = 0; length <= 230; length += length < 40 ? 1 : 7) {
          ExpectDropoutOnSlice(op, Shape{240}, TensorSlice({{begin, begin + length}}), rate, 7, 3);
        }
      }
    }
  }
}

// Slices of a matrix whose rows start anywhere in a block: column splits (runs of 1 to 13
// elements per row) and row splits, several seeds and steps.
TEST(PhiloxTest, DropoutKernelMatchesBulkUniformOnMatrixSlices) {
  const Shape logical{9, 37};
  for (int64_t step : {0, 1, 12}) {
    for (int64_t seed : {0, 5}) {
      for (int64_t columns = 1; columns <= 13; ++columns) {
        for (int64_t first = 0; first + columns <= 37; first += 5) {
          ExpectDropoutOnSlice("dropout", logical,
                               TensorSlice({{2, 9}, {first, first + columns}}), 0.3, seed, step);
        }
      }
      for (int64_t rows = 1; rows <= 9; ++rows) {
        ExpectDropoutOnSlice("dropout", logical, TensorSlice({{9 - rows, 9}, {0, 37}}), 0.5, seed,
                             step);
      }
    }
  }
}

// A large tensor in one run: many whole vector steps, against the reference's mask.
TEST(PhiloxTest, DropoutKernelMatchesBulkUniformOnALongRun) {
  ExpectDropoutOnSlice("dropout", Shape{64, 1001}, TensorSlice({{0, 64}, {0, 1001}}), 0.1, 7, 4);
  ExpectDropoutOnSlice("dropout", Shape{64, 1001}, TensorSlice({{3, 61}, {0, 1001}}), 0.9, 8, 5);
}

}  // namespace
}  // namespace cpu
}  // namespace oneflow
