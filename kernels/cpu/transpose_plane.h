// A 2-D plane copied transposed, the inner loop of the transposes that move the last axis
// (shape.cc). Internal to //kernels/cpu.
//
// Reading the output in order touches a new source cache line per element, and reading
// the source in order a new destination line per element. Both sides stay within a few
// lines at a time when the plane goes in tiles, and inside a tile 4-byte words move in
// 8 x 8 blocks through registers: 8 vector loads of source rows, 24 shuffles (GCC vector
// extensions; vunpck/vshufps/vperm2f128 under AVX2), 8 vector stores of destination rows,
// instead of 64 scalar loads and stores. Source rows are a stride apart, in different
// pages, where the hardware prefetchers do not follow, so the next tile's are prefetched.
//
// Two tilings. Planes in the caches: 64 x 64 tiles of 8 x 8 blocks, plain stores
// (TransposeWordsTiled; 0.16-0.20 ns per element on [256, 256] and [512, 512]).
// Destinations larger than the caches, written by streaming stores (stream_store.h; the
// stores would otherwise read every destination line first): strips of 256 destination
// rows, and in a strip 8 x 16 blocks (two 8 x 8 transposes) so that each block writes 8
// whole destination lines, each by two stores in a row, as the write-combining buffers
// need; the blocks start at a 64-byte boundary of the destination rows and a 32-byte one
// of the source rows (TransposeWordsStreaming). On [4096, 4096] f32: 0.44-0.51 ns per
// element, against 0.65 for the tiles with plain stores. 8-byte words (i64 ids) go
// through 64 x 64 tiles element by element.
#ifndef KERNELS_CPU_TRANSPOSE_PLANE_H_
#define KERNELS_CPU_TRANSPOSE_PLANE_H_

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <type_traits>
#include <vector>

#include "kernels/cpu/stream_store.h"
#include "oneflow_core/simd_lanes.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace oneflow {
namespace cpu {
namespace transpose_internal {

inline U32x8 LoadWords(const uint32_t* from) {
  U32x8 words;
  std::memcpy(&words, from, sizeof(words));
  return words;
}
inline void StoreWords(uint32_t* to, U32x8 words) { std::memcpy(to, &words, sizeof(words)); }

// Stores 8 words at `to`: streaming (32-byte aligned `to`) or plain.
template <bool kStream>
inline void PutWords(uint32_t* to, U32x8 words) {
#if defined(__AVX__)
  if constexpr (kStream) {
    __m256i value;
    std::memcpy(&value, &words, sizeof(value));
    _mm256_stream_si256(reinterpret_cast<__m256i*>(to), value);
    return;
  }
#endif
  StoreWords(to, words);
}

// out[i] = source[i * source_stride + k] transposed: out[k] holds column k of the 8 x 8
// block of source rows 0..7, columns 0..7. Interleave pairs of rows (within 128-bit
// halves), then pairs of pairs, then swap the halves: the classic unpack / shuffle /
// permute sequence.
inline void TransposeBlock(const uint32_t* source, int64_t source_stride, U32x8 out[8]) {
  U32x8 r[8], t[8], s[8];
  for (int k = 0; k < 8; ++k) r[k] = LoadWords(source + k * source_stride);
  for (int k = 0; k < 8; k += 2) {
    t[k] = __builtin_shuffle(r[k], r[k + 1], I32x8{0, 8, 1, 9, 4, 12, 5, 13});
    t[k + 1] = __builtin_shuffle(r[k], r[k + 1], I32x8{2, 10, 3, 11, 6, 14, 7, 15});
  }
  for (int k = 0; k < 8; k += 4) {
    for (int half = 0; half < 2; ++half) {
      s[k + 2 * half] =
          __builtin_shuffle(t[k + half], t[k + half + 2], I32x8{0, 1, 8, 9, 4, 5, 12, 13});
      s[k + 2 * half + 1] =
          __builtin_shuffle(t[k + half], t[k + half + 2], I32x8{2, 3, 10, 11, 6, 7, 14, 15});
    }
  }
  for (int k = 0; k < 4; ++k) {
    out[k] = __builtin_shuffle(s[k], s[k + 4], I32x8{0, 1, 2, 3, 8, 9, 10, 11});
    out[k + 4] = __builtin_shuffle(s[k], s[k + 4], I32x8{4, 5, 6, 7, 12, 13, 14, 15});
  }
}

// destination[i * destination_stride + j] = source[j * source_stride + i], i < 8, j < 16:
// destination row i gets 16 consecutive words, stored together.
template <bool kStream>
inline void TransposeBlock8x16(const uint32_t* source, int64_t source_stride, uint32_t* destination,
                               int64_t destination_stride) {
  U32x8 left[8], right[8];
  TransposeBlock(source, source_stride, left);
  TransposeBlock(source + 8 * source_stride, source_stride, right);
  for (int k = 0; k < 8; ++k) {
    PutWords<kStream>(destination + k * destination_stride, left[k]);
    PutWords<kStream>(destination + k * destination_stride + 8, right[k]);
  }
}

// Destination rows [row_from, row_to) of the 8 at `destination`, columns [col_from,
// col_to) of the 16, by plain stores: the parts of the plane before its blocks' aligned
// starts and after their ends, through the same 8 x 16 block (TransposeWordsStreaming).
inline void TransposeBlockPart(const uint32_t* source, int64_t source_stride, uint32_t* destination,
                               int64_t destination_stride, int64_t row_from, int64_t row_to,
                               int64_t col_from, int64_t col_to) {
  U32x8 left[8], right[8];
  TransposeBlock(source, source_stride, left);
  TransposeBlock(source + 8 * source_stride, source_stride, right);
  for (int64_t k = row_from; k < row_to; ++k) {
    uint32_t row[16];
    StoreWords(row, left[k]);
    StoreWords(row + 8, right[k]);
    std::memcpy(destination + k * destination_stride + col_from, row + col_from,
                (col_to - col_from) * sizeof(uint32_t));
  }
}

// Elements [i0, i1) x [j0, j1) one by one.
template <typename T>
void TransposeElements(const T* source, int64_t source_stride, T* destination,
                       int64_t destination_stride, int64_t i0, int64_t i1, int64_t j0, int64_t j1) {
  for (int64_t i = i0; i < i1; ++i) {
    for (int64_t j = j0; j < j1; ++j) {
      destination[i * destination_stride + j] = source[j * source_stride + i];
    }
  }
}

// A block of the plane: 8 destination rows from `start` (16 columns from `start` for a
// column block), of which rows (columns) [start + from, start + to) are stored.
struct BlockSpan {
  int64_t start, from, to, size;
  bool whole() const { return from == 0 && to == size; }
};

// Blocks of `size` (8 rows or 16 columns) covering [0, n), the whole ones from `aligned`
// on; the ones before it and after the last whole one overlap their neighbours and store
// only their own part. n >= size.
inline std::vector<BlockSpan> Spans(int64_t n, int64_t size, int64_t aligned) {
  std::vector<BlockSpan> spans;
  if (aligned > 0) spans.push_back({0, 0, aligned, size});
  int64_t start = aligned;
  for (; start + size <= n; start += size) spans.push_back({start, 0, size, size});
  if (start < n) spans.push_back({n - size, start - (n - size), size, size});
  return spans;
}

// The 4-byte plane written by streaming stores, in strips of 32 blocks of 8 destination
// rows (1 KiB of each source row), and in a strip 8 x 16 blocks (two 8 x 8 transposes),
// so that each block writes 8 whole destination lines, each by two stores in a row, as
// the write-combining buffers need: the column blocks start at the destination rows'
// first 64-byte boundary (`first`), and the row blocks where the source rows' 8 words
// are 32-byte aligned (`row_first`; loads across two lines cost more). The parts before
// and after go through blocks overlapping their neighbours, storing only their part
// plainly (one by one, their stores went to a new line each, their loads to a new
// source row: 5-20% of the time). Strips of 8 blocks: 0.53-0.56 ns per element on
// [4096, 4096]; 16: 0.49-0.56; 32: 0.46-0.51; 128: 0.54-0.56 (each strip visits every
// source row, a page each: wider strips, fewer visits and TLB misses; too wide, and the
// 16 rows of a block column no longer stay in L1). Needs rows >= 8 and cols >= 16.
inline void TransposeWordsStreaming(const uint32_t* source, int64_t source_stride,
                                    uint32_t* destination, int64_t destination_stride, int64_t rows,
                                    int64_t cols, int64_t first, int64_t row_first) {
  constexpr int64_t kStripBlocks = 32;
  const std::vector<BlockSpan> row_spans = Spans(rows, 8, row_first);
  const std::vector<BlockSpan> col_spans = Spans(cols, 16, first);
  for (size_t s0 = 0; s0 < row_spans.size(); s0 += kStripBlocks) {
    const size_t s1 = std::min(row_spans.size(), s0 + kStripBlocks);
    const int64_t strip_begin = row_spans[s0].start;
    const int64_t strip_end = row_spans[s1 - 1].start + 8;
    const int64_t lines_per_row = (strip_end - strip_begin + 15) / 16;
    for (size_t c = 0; c < col_spans.size(); ++c) {
      const BlockSpan& col = col_spans[c];
      // The next block column's 16 source rows, the strip's part of each, prefetched a
      // few lines per block below (a burst of them at the start of the block column
      // stalled the loads: 18% of the time at the prefetches).
      const uint32_t* next = source +
                             col_spans[c + 1 < col_spans.size() ? c + 1 : c].start * source_stride +
                             strip_begin;
      const int64_t lines = 16 * lines_per_row;
      const int64_t per_block = (lines + (s1 - s0) - 1) / (s1 - s0);
      int64_t line = 0;
      for (size_t r = s0; r < s1; ++r) {
        for (int64_t end = std::min(line + per_block, lines); line < end; ++line) {
          __builtin_prefetch(
              next + (line / lines_per_row) * source_stride + (line % lines_per_row) * 16, 0, 2);
        }
        const BlockSpan& row = row_spans[r];
        const uint32_t* from = source + col.start * source_stride + row.start;
        uint32_t* to = destination + row.start * destination_stride + col.start;
        if (row.whole() && col.whole()) {
          TransposeBlock8x16<true>(from, source_stride, to, destination_stride);
        } else {
          TransposeBlockPart(from, source_stride, to, destination_stride, row.from, row.to,
                             col.from, col.to);
        }
      }
    }
  }
}

// The 4-byte plane in 64 x 64 tiles of 8 x 8 blocks, plain stores: for planes in the
// caches (0.16-0.20 ns per element on [256, 256] and [512, 512], against 0.19-0.28 for
// the streaming strips), and the next tile's source prefetched.
inline void TransposeWordsTiled(const uint32_t* source, int64_t source_stride,
                                uint32_t* destination, int64_t destination_stride, int64_t rows,
                                int64_t cols) {
  constexpr int64_t kTile = 64;
  constexpr int64_t kBlock = 8;
  for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
    const int64_t j1 = std::min(j0 + kTile, cols);
    for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
      const int64_t i1 = std::min(i0 + kTile, rows);
      // The next tile reads the same source rows j0..j1 from column i1 on.
      const int64_t next = i1 < rows ? i1 : i0;
      for (int64_t i = i0; i < i1; i += kBlock) {
        for (int64_t j = j0; j < j1; j += kBlock) {
          for (int64_t k = j; k < std::min(j + kBlock, j1); ++k) {
            __builtin_prefetch(source + k * source_stride + next + (i - i0), 0, 2);
          }
          if (i + kBlock <= i1 && j + kBlock <= j1) {
            U32x8 block[8];
            TransposeBlock(source + j * source_stride + i, source_stride, block);
            for (int k = 0; k < 8; ++k)
              StoreWords(destination + (i + k) * destination_stride + j, block[k]);
          } else {
            TransposeElements(source, source_stride, destination, destination_stride, i,
                              std::min(i + kBlock, i1), j, std::min(j + kBlock, j1));
          }
        }
      }
    }
  }
}

}  // namespace transpose_internal

// destination[i * destination_stride + j] = source[j * source_stride + i] for i < rows,
// j < cols: rows of the destination are columns of the source. T is uint32_t (f32 and
// i32 elements) or uint64_t (i64). With kStream, 4-byte planes whose destination rows are
// a multiple of 64 bytes apart are written by streaming stores (no EndStreaming: the
// caller's).
template <bool kStream, typename T>
void TransposePlane(const T* source, int64_t source_stride, T* destination,
                    int64_t destination_stride, int64_t rows, int64_t cols) {
  using namespace transpose_internal;
  if constexpr (std::is_same_v<T, uint32_t>) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(destination);
    const uintptr_t source_address = reinterpret_cast<uintptr_t>(source);
    if (kStream && destination_stride % 16 == 0 && address % sizeof(T) == 0 && rows >= 8 &&
        cols >= 16) {
      // The first column at a 64-byte boundary of the destination rows; the first source
      // column at a 32-byte boundary of the source rows (where they all share it).
      const int64_t first = (16 - (address / sizeof(T)) % 16) % 16;
      const int64_t row_first = source_stride % 8 == 0 && source_address % sizeof(T) == 0
                                    ? (8 - (source_address / sizeof(T)) % 8) % 8
                                    : 0;
      TransposeWordsStreaming(source, source_stride, destination, destination_stride, rows, cols,
                              first, row_first);
    } else {
      TransposeWordsTiled(source, source_stride, destination, destination_stride, rows, cols);
    }
  } else {
    constexpr int64_t kTile = 64;
    for (int64_t j0 = 0; j0 < cols; j0 += kTile) {
      for (int64_t i0 = 0; i0 < rows; i0 += kTile) {
        TransposeElements(source, source_stride, destination, destination_stride, i0,
                          std::min(i0 + kTile, rows), j0, std::min(j0 + kTile, cols));
      }
    }
  }
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_TRANSPOSE_PLANE_H_
