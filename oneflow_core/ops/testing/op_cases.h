// Test helper: the case description and input makers shared by the op tests that run
// ops on random inputs (oneflow_core/ops/ops_test: every SBP signature against the
// reference; kernels/cpu/conformance_test: every CPU kernel against the reference;
// kernels/cpu/gradient_test: backward kernels against finite differences).
#ifndef ONEFLOW_CORE_OPS_TESTING_OP_CASES_H_
#define ONEFLOW_CORE_OPS_TESTING_OP_CASES_H_

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "oneflow_core/ops/attr.h"
#include "oneflow_core/ops/op_definition.h"
#include "oneflow_core/ops/reference/dense.h"

namespace oneflow {

// Rewrites a case's random inputs (valid MoE routing, unused capacity slots, masks).
using PrepareInputs = std::function<void(std::vector<Dense>*)>;

// One op on inputs of given types and attributes.
struct OpCase {
  std::string type;
  std::vector<TensorType> inputs;
  AttrMap attrs;
  int64_t index_limit = 0;       // Index inputs (ids, labels) are drawn from [0, limit).
  std::vector<size_t> positive;  // Inputs drawn positive (divisors, Adam's v).
  PrepareInputs prepare;         // May be empty.
};

// The case's inputs: floats drawn from +-[0.5, 2) (positive where the case says), index
// inputs from [0, index_limit), from a fixed seed, then `prepare` applied. Values are
// doubles; a test that runs float kernels rounds them (kernels/cpu/kernel_testing.h).
std::vector<Dense> RandomInputs(const OpCase& c);

// inputs[at] (index) and inputs[at + 1] (slot) replaced by moe_route of random probs
// [B, T, experts]: valid choices, distinct slots, and some dropped ones (-1).
PrepareInputs Routed(size_t at, int64_t experts, int64_t top_k, int64_t capacity);

// Ring steps' results [..., hd + 1] as a step leaves rows that see no key of its block:
// in input i, every row whose index is a multiple of every[i] gets outputs 0 and the
// log-sum-exp kMaskedRowLse (oneflow_core/ops/ring_blocks.h); the others keep their
// random values (ring_attention_merge's cases: masked on one side, on both, on neither).
PrepareInputs MaskedRingRows(std::vector<int64_t> every);

// Zeroes the trailing capacity rows of the inputs `ks` [B, E, C, X] as unused slots are:
// block (b, e) keeps its first (b * E + e + k + offset) % (C + 1) rows, some none, some
// all. The expert kernels skip those rows; the reference multiplies them.
PrepareInputs UnusedSlots(std::vector<size_t> ks, int64_t offset = 0);

// Turns `local`, device `rank`'s copy of a P input over `devices` devices, into its part:
// x * w_r + noise_r with weights summing to 1 and noise summing to 0 over devices, so the
// parts differ in sign and an op that does not commute with summation (relu, scalar_add)
// is caught.
void MakePartial(Dense* local, int64_t rank, int64_t devices);

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_TESTING_OP_CASES_H_
