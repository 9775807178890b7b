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
  // Placed registers in offset order, so the first gap is found in one scan without
  // sorting: O(placed) per register.
  std::vector<int64_t> placed;
  for (int64_t r : order) {
    const RegisterLifetime& reg = registers[r];
    const int64_t size = AlignUp(reg.size_bytes);
    int64_t offset = 0;
    for (int64_t q : placed) {
      const RegisterLifetime& other = registers[q];
      if (other.last < reg.first || reg.last < other.first) continue;
      if (layout.offsets[q] >= offset + size) break;  // The gap before q fits.
      offset = std::max(offset, layout.offsets[q] + AlignUp(other.size_bytes));
    }
    layout.offsets[r] = offset;
    layout.size_bytes = std::max(layout.size_bytes, offset + size);
    auto at = std::upper_bound(placed.begin(), placed.end(), offset, [&](int64_t value, int64_t q) {
      return value < layout.offsets[q];
    });
    placed.insert(at, r);
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
  // Who must finish before each register is written: for every byte range of it, the
  // register that used those bytes last before it. Earlier users of the same bytes are
  // ordered before that one by its own edges, so one edge per range is enough.
  std::vector<int64_t> by_offset(n);
  std::iota(by_offset.begin(), by_offset.end(), 0);
  std::sort(by_offset.begin(), by_offset.end(), [&](int64_t a, int64_t b) {
    return layout.offsets[a] != layout.offsets[b] ? layout.offsets[a] < layout.offsets[b] : a < b;
  });
  std::vector<std::vector<int64_t>> earlier(n);  // Address-overlapping, lifetime-earlier.
  for (size_t i = 0; i < n; ++i) {
    const int64_t a = by_offset[i];
    if (registers[a].size_bytes == 0) continue;
    const int64_t a_end = layout.offsets[a] + AlignUp(registers[a].size_bytes);
    for (size_t j = i + 1; j < n && layout.offsets[by_offset[j]] < a_end; ++j) {
      const int64_t b = by_offset[j];
      if (registers[b].size_bytes == 0) continue;
      if (registers[a].last < registers[b].first) earlier[b].push_back(a);
      if (registers[b].last < registers[a].first) earlier[a].push_back(b);
    }
  }
  for (size_t r = 0; r < n; ++r) {
    if (earlier[r].empty()) continue;
    const int64_t begin = layout.offsets[r];
    const int64_t end = begin + AlignUp(registers[r].size_bytes);
    std::vector<int64_t> cuts = {begin, end};
    for (int64_t q : earlier[r]) {
      cuts.push_back(std::clamp(layout.offsets[q], begin, end));
      cuts.push_back(std::clamp(layout.offsets[q] + AlignUp(registers[q].size_bytes), begin, end));
    }
    std::sort(cuts.begin(), cuts.end());
    cuts.erase(std::unique(cuts.begin(), cuts.end()), cuts.end());
    std::vector<int64_t> chosen;
    for (size_t c = 0; c + 1 < cuts.size(); ++c) {
      int64_t latest = -1;
      for (int64_t q : earlier[r]) {
        const bool covers = layout.offsets[q] <= cuts[c] &&
                            layout.offsets[q] + AlignUp(registers[q].size_bytes) >= cuts[c + 1];
        if (covers && (latest < 0 || registers[q].last > registers[latest].last)) latest = q;
      }
      if (latest >= 0) chosen.push_back(latest);
    }
    std::sort(chosen.begin(), chosen.end());
    chosen.erase(std::unique(chosen.begin(), chosen.end()), chosen.end());
    for (int64_t q : chosen) layout.reuses.push_back({q, static_cast<int64_t>(r)});
  }
  std::sort(layout.reuses.begin(), layout.reuses.end());
  return layout;
}

}  // namespace oneflow
