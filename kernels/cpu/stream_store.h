// Non-temporal ("streaming") stores for kernel outputs larger than the last-level cache.
// Internal to //kernels/cpu.
//
// Why: a plain store to a line that is not in the cache first reads the line from memory
// (read for ownership), so a kernel reading one tensor and writing one moves 3 bytes for
// every 2 it needs. A non-temporal store writes whole lines straight to memory through
// the write-combining buffers, without that read. On the Zen 4 build VM a copy loop runs
// at 32-34 GB/s (read plus written) with plain stores and 44-47 GB/s with streaming ones;
// an add at 28-31 against 40. But a kernel bound by its arithmetic gains nothing, and two
// (dropout, softmax) measured slower streaming: each kernel's choice is measured
// (docs/kernels.md).
//
// When: only for outputs of at least StreamingThresholdBytes(), 3/4 of the L3 cache (as
// glibc's memcpy decides). A smaller output is typically read right back by the next op,
// from the cache; streamed, it would come from memory instead. Above the threshold the
// next op finds little of it in the cache either way. The values stored are the same
// either way: only where the bytes go differs.
//
// How: _mm256_stream_ps needs 32-byte alignment, and the write-combining buffers whole
// lines written together: 128-bit streaming stores at 16-byte boundaries ran at 25 GB/s
// against 39 for aligned 256-bit ones on a copy, and at 6 GB/s with four rows written
// alternately. WriteLanes (elementwise outputs) starts with up to 7 lanes stored plainly
// to reach a 32-byte boundary; a writer whose groups of 8 are fixed by something else
// (the runs of a gather) uses LaneWriter, which realigns consecutive groups in registers.
// Streaming stores are weakly ordered: a kernel that streamed calls EndStreaming()
// (sfence; WithStreaming does) before it returns, so that whoever is signalled next sees
// the data.
#ifndef KERNELS_CPU_STREAM_STORE_H_
#define KERNELS_CPU_STREAM_STORE_H_

#include <unistd.h>

#include <algorithm>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <type_traits>

#include "kernels/cpu/f32x8.h"

#if defined(__AVX__)
#include <immintrin.h>
#endif

namespace oneflow {
namespace cpu {

// 3/4 of the L3 cache: the size Linux gives for cpu0's level-3 cache in sysfs, else the
// C library's, at most 32 MiB (a core's L3 slice on current x86 parts; under KVM the C
// library reported 320 MiB here, the host's whole L3, where sysfs said 32 MiB), 32 MiB where
// neither says. So 24 MiB here.
inline int64_t L3CacheBytes() {
  int64_t bytes = 0;
  if (FILE* file = std::fopen("/sys/devices/system/cpu/cpu0/cache/index3/size", "r")) {
    long long size = 0;
    char unit = 0;
    if (std::fscanf(file, "%lld%c", &size, &unit) >= 1) {
      bytes = size * (unit == 'K' ? 1024 : unit == 'M' ? 1024 * 1024 : 1);
    }
    std::fclose(file);
  }
#if defined(_SC_LEVEL3_CACHE_SIZE)
  if (bytes <= 0) bytes = sysconf(_SC_LEVEL3_CACHE_SIZE);
#endif
  constexpr int64_t kMost = int64_t{32} << 20;
  return bytes <= 0 ? kMost : std::min(bytes, kMost);
}

// The environment variable ONEFLOW_CPU_STREAM_BYTES, where set to a number, replaces it
// (0: every output streams, as conformance_streaming_test runs the kernels).
inline int64_t StreamingThresholdBytes() {
  static const int64_t threshold = [] {
    if (const char* text = std::getenv("ONEFLOW_CPU_STREAM_BYTES")) {
      char* end = nullptr;
      const long long bytes = std::strtoll(text, &end, 10);
      if (end != text && *end == '\0' && bytes >= 0) return static_cast<int64_t>(bytes);
    }
    return L3CacheBytes() / 4 * 3;
  }();
  return threshold;
}

// Whether an output of `bytes` is written with streaming stores.
inline bool ShouldStream(int64_t bytes) {
#if defined(__AVX__)
  return bytes >= StreamingThresholdBytes();
#else
  return false;
#endif
}

// Orders the streaming stores before every later store (sfence).
inline void EndStreaming() {
#if defined(__AVX__)
  _mm_sfence();
#endif
}

// Calls fn(std::true_type) when `stream`, then EndStreaming(), else fn(std::false_type):
// the kernel's loops are instantiated with the store kind as a constant.
template <typename Fn>
inline void WithStreaming(bool stream, Fn&& fn) {
  if (stream) {
    fn(std::true_type{});
    EndStreaming();
  } else {
    fn(std::false_type{});
  }
}

// Writes a run of floats given as consecutive groups of 8 lanes, whose grouping is fixed
// by something other than the output's alignment (the runs of a gather, shape.cc): with
// kStream, every 32-byte-aligned stretch of the run goes out by one 256-bit streaming
// store, lanes of two consecutive groups combined where the run does not start at a
// 32-byte boundary (one vperm2f128 at a 16-byte offset, two vpermps and a blend at other
// 4-byte offsets), the lanes before the first boundary and after the last by plain
// stores. Without kStream, plain stores of the groups as given. Keep the writer in one
// function's registers: passed by reference through calls, its state went through memory
// in every Put.
//
//   LaneWriter<kStream> writer(out);
//   writer.Put(v0); writer.Put(v1); ...; writer.PutLast(v, n);  // or Finish()
template <bool kStream>
class LaneWriter {
 public:
  explicit LaneWriter(float* to) : to_(to) {
#if defined(__AVX2__)
    if constexpr (kStream) {
      const uintptr_t address = reinterpret_cast<uintptr_t>(to);
      if (address % sizeof(float) == 0) {
        shift_ = static_cast<int>((address / sizeof(float)) % kLanes);
        streaming_ = true;
        const I32x8 lanes{0, 1, 2, 3, 4, 5, 6, 7};
        rotate_ = (lanes - shift_) & 7;   // vpermps indices: lane m takes m - shift.
        from_previous_ = lanes < shift_;  // Lanes taken from the previous group.
      }
    }
#endif
  }

  // The next 8 lanes of the run.
  void Put(F32x8 value) {
#if defined(__AVX2__)
    if constexpr (kStream) {
      if (streaming_) {
        PutStreaming(value);
        return;
      }
    }
#endif
    Store(to_ + written_, value);
    written_ += kLanes;
  }

  // The last n <= 8 lanes of the run (none after it).
  void PutLast(F32x8 value, int64_t n) {
#if defined(__AVX2__)
    if constexpr (kStream) {
      if (streaming_) {
        // The pending lanes of the previous group, then these, plainly.
        FinishStreaming();
        StorePartial(to_ + written_, n, value);
        written_ += n;
        return;
      }
    }
#endif
    StorePartial(to_ + written_, n, value);
    written_ += n;
  }

  // Ends a run whose last group was given to Put.
  void Finish() {
#if defined(__AVX2__)
    if constexpr (kStream) {
      if (streaming_) FinishStreaming();
    }
#endif
  }

 private:
#if defined(__AVX2__)
  // Group k (`written_` = 8k) covers the run's elements 8k .. 8k + 7; the 32-byte boundary
  // falls at 8k + (8 - shift) for shift > 0.
  void PutStreaming(F32x8 value) {
    if (shift_ == 0) {
      _mm256_stream_ps(to_ + written_, value);
    } else if (!has_previous_) {
      // Elements 0 .. 8 - shift - 1 before the first boundary, plainly.
      StorePartial(to_, kLanes - shift_, value);
      has_previous_ = true;
    } else {
      F32x8 combined;
      if (shift_ == 4) {
        combined = _mm256_permute2f128_ps(previous_, value, 0x21);
      } else {
        const __m256i rotate = (__m256i)rotate_;
        combined =
            _mm256_blendv_ps(_mm256_permutevar8x32_ps(value, rotate),
                             _mm256_permutevar8x32_ps(previous_, rotate), (__m256)from_previous_);
      }
      _mm256_stream_ps(to_ + written_ - shift_, combined);
    }
    previous_ = value;
    written_ += kLanes;
  }

  // The previous group's last `shift` lanes, not yet written, plainly.
  void FinishStreaming() {
    if (shift_ != 0 && has_previous_) {
      float lanes[kLanes];
      Store(lanes, previous_);
      std::memcpy(to_ + written_ - shift_, lanes + kLanes - shift_, shift_ * sizeof(float));
      has_previous_ = false;
    }
  }

  bool streaming_ = false;
  bool has_previous_ = false;
  int shift_ = 0;  // The run's start in floats past a 32-byte boundary.
  I32x8 rotate_{}, from_previous_{};
  F32x8 previous_{};
#endif
  float* to_;
  int64_t written_ = 0;  // Elements given so far (stored or pending).
};

// out[i .. i + count) = the first `count` lanes of value(i, count), over groups covering
// [0, n) in order. count is kLanes except in the last group and, when kStream, the first
// (the lanes up to out's first 32-byte boundary). value must compute each lane from its
// own element only: the groups differ with out's alignment. No fence (EndStreaming).
template <bool kStream, typename ValueFn>
inline void WriteLanes(float* out, int64_t n, ValueFn&& value) {
  int64_t i = 0;
#if defined(__AVX__)
  if constexpr (kStream) {
    const uintptr_t address = reinterpret_cast<uintptr_t>(out);
    if (address % sizeof(float) == 0) {
      const int64_t head =
          std::min<int64_t>(n, (kLanes - (address / sizeof(float)) % kLanes) % kLanes);
      if (head > 0) StorePartial(out, head, value(int64_t{0}, head));
      i = head;
      for (; i + kLanes <= n; i += kLanes) _mm256_stream_ps(out + i, value(i, kLanes));
      if (i < n) StorePartial(out + i, n - i, value(i, n - i));
      return;
    }
  }
#endif
  for (; i + kLanes <= n; i += kLanes) Store(out + i, value(i, kLanes));
  if (i < n) StorePartial(out + i, n - i, value(i, n - i));
}

// Lanes i .. i + count of x, the others 0 (count < kLanes: a partial load).
inline F32x8 LoadLanes(const float* x, int64_t i, int64_t count) {
  return count == kLanes ? Load(x + i) : LoadPartial(x + i, count, 0.0f);
}

// Map (f32x8.h) with the store kind as a parameter: out[i] = fn(x[i]).
template <bool kStream, typename Fn>
inline void MapTo(const float* x, float* out, int64_t n, Fn&& fn) {
  WriteLanes<kStream>(out, n, [&](int64_t i, int64_t count) { return fn(LoadLanes(x, i, count)); });
}

// out[i] = fn(x[i], y[i]).
template <bool kStream, typename Fn>
inline void MapTo(const float* x, const float* y, float* out, int64_t n, Fn&& fn) {
  WriteLanes<kStream>(out, n, [&](int64_t i, int64_t count) {
    return fn(LoadLanes(x, i, count), LoadLanes(y, i, count));
  });
}

// out[i] = fn(x[i], y[i], z[i]).
template <bool kStream, typename Fn>
inline void MapTo(const float* x, const float* y, const float* z, float* out, int64_t n, Fn&& fn) {
  WriteLanes<kStream>(out, n, [&](int64_t i, int64_t count) {
    return fn(LoadLanes(x, i, count), LoadLanes(y, i, count), LoadLanes(z, i, count));
  });
}

}  // namespace cpu
}  // namespace oneflow

#endif  // KERNELS_CPU_STREAM_STORE_H_
