// Where the positions of ring attention's blocks lie in the logical sequence, and which
// block pairs the causal mask leaves any work in (docs/context_parallelism.md). Shared by
// the ring_attention kernels (CPU and reference), which skip what is masked, and by the
// plan readers that count the work per device (examples/common/cp_traffic.h).
//
// A sequence of S positions is held as `blocks` blocks of S / blocks positions, block r on
// context-parallel device r:
//   contiguous  block r = positions [r S/blocks, (r+1) S/blocks): under a causal mask
//               device r sees r + 1 key blocks, device 0 one; the work grows with r.
//   zig-zag     the sequence is 2 x blocks chunks of S / (2 blocks); block r = chunk r
//               then chunk 2 blocks - 1 - r (Megatron's load-balanced context
//               parallelism): every device holds one early and one late chunk, so every
//               device sees as many key positions.
#ifndef ONEFLOW_CORE_OPS_RING_BLOCKS_H_
#define ONEFLOW_CORE_OPS_RING_BLOCKS_H_

#include <algorithm>
#include <cstdint>

namespace oneflow {

// The lse a ring step reports for a query row that sees no key of its block: finite (the
// merge takes a softmax over steps; exp(kMaskedRowLse - lse) is exactly 0 next to any
// real step), as the masks' fill -1e9.
inline constexpr float kMaskedRowLse = -1e9f;

// Chunks per block: 2 for zig-zag, 1 for contiguous.
inline int64_t RingChunks(bool zigzag) { return zigzag ? 2 : 1; }

// The logical chunk index of chunk `chunk` (0 or 1) of block `block`, in units of
// S / (blocks x RingChunks(zigzag)) positions.
inline int64_t RingChunkIndex(int64_t block, int64_t chunk, int64_t blocks, bool zigzag) {
  return zigzag ? (chunk == 0 ? block : 2 * blocks - 1 - block) : block;
}

// The logical position of entry `index` (0 <= index < block_length) of block `block`.
inline int64_t RingPosition(int64_t block, int64_t index, int64_t block_length, int64_t blocks, bool zigzag) {
  const int64_t chunk_length = block_length / RingChunks(zigzag);
  return RingChunkIndex(block, index / chunk_length, blocks, zigzag) * chunk_length + index % chunk_length;
}

// The logical position of index `i` of a whole sequence of `length` positions stored in
// zig-zag order (what RingPosition gives for block i / (length / blocks)); contiguous: i.
inline int64_t SequencePosition(int64_t i, int64_t length, int64_t blocks, bool zigzag) {
  if (!zigzag) return i;
  const int64_t block_length = length / blocks;
  return RingPosition(i / block_length, i % block_length, block_length, blocks, zigzag);
}

// How many (query chunk, key chunk) pairs of query block `query_block` against key block
// `key_block` hold at least one key at or before its query (the tiles a ring step
// computes; the rest it skips), of RingChunks(zigzag)^2.
inline int64_t RingTilesComputed(int64_t query_block, int64_t key_block, int64_t blocks, bool zigzag) {
  int64_t tiles = 0;
  for (int64_t q = 0; q < RingChunks(zigzag); ++q) {
    for (int64_t k = 0; k < RingChunks(zigzag); ++k) {
      // Equal chunks: the diagonal (causal triangle); an earlier key chunk: whole.
      tiles += RingChunkIndex(key_block, k, blocks, zigzag) <= RingChunkIndex(query_block, q, blocks, zigzag);
    }
  }
  return tiles;
}

// Query rows one ring tile computes at once. The kernels' scratch (a tile's scores, and in
// the gradient its probabilities and their gradient) is this many rows by at most one
// block's keys, so it grows with S / blocks, not with its square (a tile of all of a
// block's rows would hold group x (S / blocks)^2 scores).
inline constexpr int64_t kRingRowsPerTile = 64;

// Floats of scratch one act of ring_attention (grad = false) or ring_attention_grad
// (grad = true) uses for q of `rows` rows per leading index, K/V blocks of `s` positions
// and head dimension `hd`: the kernels allocate this once per act and carve their buffers
// from it. A tile has at most kRingRowsPerTile rows of one query chunk (contiguous: all of a
// leading index's rows) and sees at most s keys; the products P V and dscore K go through
// a tile's rows x hd, those into the keys' and values' rows through a chunk x hd.
inline int64_t RingAttentionWorkspaceFloats(int64_t rows, int64_t s, int64_t hd, bool zigzag, bool grad) {
  const int64_t chunk_length = s / RingChunks(zigzag);
  const int64_t tile_rows = std::min(kRingRowsPerTile, zigzag ? chunk_length : rows);
  const int64_t scores = tile_rows * s;
  if (!grad) return scores + tile_rows * hd;
  return 2 * scores + std::max(tile_rows, chunk_length) * hd;
}

// The key block query block `query_block` holds at ring step `step`: (query_block - step)
// mod blocks (each step passes K and V one device on).
inline int64_t RingKeyBlock(int64_t query_block, int64_t step, int64_t blocks) {
  return ((query_block - step) % blocks + blocks) % blocks;
}

}  // namespace oneflow

#endif  // ONEFLOW_CORE_OPS_RING_BLOCKS_H_
