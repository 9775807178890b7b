#include "compiler/memory_layout.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace oneflow {

int64_t AlignUp(int64_t bytes) {
  return (bytes + kRegisterAlignment - 1) / kRegisterAlignment * kRegisterAlignment;
}

MemoryLayout LayOutRegisters(const std::vector<RegisterLifetime>& registers) {
  const size_t n = registers.size();
  MemoryLayout layout;
  layout.offsets.assign(n, 0);
  std::vector<int64_t> order(n);
  std::iota(order.begin(), order.end(), 0);
  std::sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
    const RegisterLifetime& x = registers[a];
    const RegisterLifetime& y = registers[b];
    if (AlignUp(x.size_bytes) != AlignUp(y.size_bytes)) {
      return AlignUp(x.size_bytes) > AlignUp(y.size_bytes);
    }
    if (x.first != y.first) return x.first < y.first;
    return a < b;
  });
  std::vector<int64_t> placed;
  std::vector<std::pair<int64_t, int64_t>> busy;  // (offset, end) of conflicting ones.
  for (int64_t r : order) {
    const RegisterLifetime& reg = registers[r];
    const int64_t size = AlignUp(reg.size_bytes);
    busy.clear();
    for (int64_t q : placed) {
      const RegisterLifetime& other = registers[q];
      if (other.last < reg.first || reg.last < other.first) continue;
      busy.push_back({layout.offsets[q], layout.offsets[q] + AlignUp(other.size_bytes)});
    }
    std::sort(busy.begin(), busy.end());
    int64_t offset = 0;
    for (const auto& [begin, end] : busy) {
      if (begin >= offset + size) break;  // The gap before `begin` fits.
      offset = std::max(offset, end);
    }
    layout.offsets[r] = offset;
    layout.size_bytes = std::max(layout.size_bytes, offset + size);
    placed.push_back(r);
  }
  // Lower bound: sweep the positions, adding sizes at `first` and removing after `last`.
  std::map<int64_t, int64_t> delta;
  for (const RegisterLifetime& reg : registers) {
    delta[reg.first] += AlignUp(reg.size_bytes);
    delta[reg.last + 1] -= AlignUp(reg.size_bytes);
  }
  int64_t live = 0;
  for (const auto& [position, change] : delta) {
    live += change;
    layout.lower_bound_bytes = std::max(layout.lower_bound_bytes, live);
  }
  // Pairs sharing memory: sort by offset and compare each with those starting before it ends.
  std::vector<int64_t> by_offset(n);
  std::iota(by_offset.begin(), by_offset.end(), 0);
  std::sort(by_offset.begin(), by_offset.end(), [&](int64_t a, int64_t b) {
    return layout.offsets[a] != layout.offsets[b] ? layout.offsets[a] < layout.offsets[b] : a < b;
  });
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = by_offset[i];
    const int64_t a_end = layout.offsets[a] + AlignUp(registers[a].size_bytes);
    for (size_t j = i + 1; j < n && layout.offsets[by_offset[j]] < a_end; ++j) {
      const int64_t b = by_offset[j];
      if (registers[b].size_bytes == 0 || registers[a].size_bytes == 0) continue;
      if (registers[a].last < registers[b].first) layout.reuses.push_back({a, b});
      if (registers[b].last < registers[a].first) layout.reuses.push_back({b, a});
    }
  }
  std::sort(layout.reuses.begin(), layout.reuses.end());
  return layout;
}

}  // namespace oneflow
