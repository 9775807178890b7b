// Memory layout of one device's registers: the interval-packing problem behind the
// memory planning pass, kept free of protos so it can be tested on its own.
#ifndef COMPILER_MEMORY_LAYOUT_H_
#define COMPILER_MEMORY_LAYOUT_H_

#include <cstdint>
#include <utility>
#include <vector>

namespace oneflow {

// Offsets and sizes are multiples of this, so every register starts cache-line aligned.
inline constexpr int64_t kRegisterAlignment = 64;

struct RegisterLifetime {
  int64_t size_bytes = 0;
  // Positions in the device's actor order: producer, and last consumer (>= first).
  int64_t first = 0;
  int64_t last = 0;
};

struct MemoryLayout {
  std::vector<int64_t> offsets;  // One per register.
  int64_t size_bytes = 0;        // End of the highest register.
  // The largest sum of (aligned) sizes of registers live at one position.
  int64_t lower_bound_bytes = 0;
  // (earlier, later) register pairs that share memory: `later` may only be written once
  // every reader of `earlier` is done. Only the last earlier user of each byte range is
  // listed; the ones before it are ordered through that one's own pairs.
  std::vector<std::pair<int64_t, int64_t>> reuses;
};

// Places registers largest first, each at the lowest aligned offset where it overlaps
// no register whose lifetime overlaps its own. Deterministic: ties by position, then
// index.
MemoryLayout LayOutRegisters(const std::vector<RegisterLifetime>& registers);

int64_t AlignUp(int64_t bytes);

}  // namespace oneflow

#endif  // COMPILER_MEMORY_LAYOUT_H_
