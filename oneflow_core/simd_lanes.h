// The SIMD vector types of the tree, one name each: <element><bits>x<lanes>, so that no
// vector reads like a dtype (oneflow_core/dtype.h's Float16 and Float8E4M3 are element
// types; F32x16 is sixteen floats).
//
// GCC/Clang vector extension: `a * b + c` on F32x8 is lane-wise, a comparison gives an
// I32x8 mask of 0 / -1 lanes, `mask ? a : b` is a blend. An 8-lane 32-bit vector is one
// AVX register under -march=x86-64-v3 and two SSE registers elsewhere; the compiler
// lowers the same source to whatever the target has. Compilers without the extension
// (no __GNUC__) see none of these types; code using them provides a scalar form.
//
// The operations on them live with their users (kernels/cpu/f32x8.h for the kernels'
// loops, kernels/compression/lanes.h for the codecs', oneflow_core/comm/reduce.cc for the
// reduction), since each package has its own rules (e.g. the codecs compile with
// -ffp-contract=off so their vector and scalar forms agree bit for bit).
#ifndef ONEFLOW_CORE_SIMD_LANES_H_
#define ONEFLOW_CORE_SIMD_LANES_H_

#include <cstdint>

namespace oneflow {

#if defined(__GNUC__)
// 256 bits.
using F32x8 = float __attribute__((vector_size(32)));
using I32x8 = int32_t __attribute__((vector_size(32)));   // masks, indices, shifts
using U32x8 = uint32_t __attribute__((vector_size(32)));  // bit patterns: wrap, >> is logical
using F64x4 = double __attribute__((vector_size(32)));
// F32x8 at any float address: loads and stores through it need no 32-byte alignment.
using F32x8Unaligned = float __attribute__((vector_size(32), aligned(4)));
// 512 bits (AVX-512 code only).
using F32x16 = float __attribute__((vector_size(64)));
// 64 bits: the bytes of eight lanes (codes of the 8-bit codecs).
using U8x8 = uint8_t __attribute__((vector_size(8)));
using I8x8 = int8_t __attribute__((vector_size(8)));
#endif

}  // namespace oneflow

#endif  // ONEFLOW_CORE_SIMD_LANES_H_
