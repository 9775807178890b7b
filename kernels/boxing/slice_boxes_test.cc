#include "kernels/boxing/slice_boxes.h"

#include <cstring>
#include <optional>
#include <vector>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TensorSlice Box(std::vector<Range> ranges) { return TensorSlice(std::move(ranges)); }

// The buffer of `slice` of a [4, 5, 6] tensor whose element at logical offset i is i.
std::vector<int32_t> Fill(const TensorSlice& slice) {
  std::vector<int32_t> buffer(slice.NumElements());
  ForEachContiguousRun(Shape{4, 5, 6}, slice, [&](int64_t local, int64_t logical, int64_t length) {
    for (int64_t i = 0; i < length; ++i) buffer[local + i] = static_cast<int32_t>(logical + i);
  });
  return buffer;
}

TEST(SliceBoxesTest, IntersectAndContains) {
  const TensorSlice a = Box({{0, 3}, {2, 5}});
  const TensorSlice b = Box({{1, 4}, {0, 3}});
  EXPECT_EQ(Intersect(a, b), Box({{1, 3}, {2, 3}}));
  EXPECT_EQ(Intersect(a, Box({{3, 4}, {0, 5}})).NumElements(), 0);
  EXPECT_TRUE(Contains(a, Box({{1, 2}, {2, 5}})));
  EXPECT_FALSE(Contains(a, b));
  EXPECT_TRUE(Contains(a, Box({{7, 7}, {0, 9}})));  // empty
}

TEST(SliceBoxesTest, ContiguousOffsetOnlyForWholeTrailingAxes) {
  const TensorSlice slice = Box({{0, 4}, {0, 5}, {0, 6}});
  EXPECT_EQ(ContiguousOffset(slice, Box({{1, 3}, {0, 5}, {0, 6}})), std::optional<int64_t>(30));
  EXPECT_EQ(ContiguousOffset(slice, Box({{2, 3}, {1, 4}, {0, 6}})), std::optional<int64_t>(66));
  EXPECT_EQ(ContiguousOffset(slice, Box({{2, 3}, {1, 2}, {3, 5}})), std::optional<int64_t>(69));
  EXPECT_EQ(ContiguousOffset(slice, Box({{1, 3}, {1, 4}, {0, 6}})), std::nullopt);
  EXPECT_EQ(ContiguousOffset(slice, Box({{0, 1}, {0, 2}, {0, 3}})), std::nullopt);
}

TEST(SliceBoxesTest, BackToBackOffset) {
  const TensorSlice slice = Box({{0, 4}, {0, 5}});
  EXPECT_EQ(BackToBackOffset(slice,
                             {Box({{0, 2}, {0, 5}}), Box({{2, 2}, {0, 5}}), Box({{2, 4}, {0, 5}})}),
            std::optional<int64_t>(0));
  EXPECT_EQ(BackToBackOffset(slice, {Box({{1, 2}, {0, 5}}), Box({{2, 3}, {0, 5}})}),
            std::optional<int64_t>(5));
  EXPECT_EQ(BackToBackOffset(slice, {Box({{2, 4}, {0, 5}}), Box({{0, 2}, {0, 5}})}), std::nullopt);
  EXPECT_EQ(BackToBackOffset(slice, {Box({{0, 4}, {0, 2}}), Box({{0, 4}, {2, 5}})}), std::nullopt);
}

TEST(SliceBoxesTest, PackUnpackAndCopyNonContiguousBoxes) {
  const TensorSlice slice = Box({{1, 4}, {0, 5}, {2, 6}});
  const std::vector<int32_t> buffer = Fill(slice);
  const TensorSlice box = Box({{2, 4}, {1, 3}, {3, 5}});
  std::vector<int32_t> packed(box.NumElements());
  PackBox(slice, buffer.data(), box, sizeof(int32_t), packed.data());
  EXPECT_EQ(packed, Fill(box));

  std::vector<int32_t> unpacked(slice.NumElements(), -1);
  UnpackBox(packed.data(), box, slice, sizeof(int32_t), unpacked.data());
  int64_t written = 0;
  for (size_t i = 0; i < unpacked.size(); ++i) {
    if (unpacked[i] == -1) continue;
    EXPECT_EQ(unpacked[i], buffer[i]);
    ++written;
  }
  EXPECT_EQ(written, box.NumElements());

  const TensorSlice to = Box({{2, 4}, {0, 4}, {0, 6}});
  std::vector<int32_t> copied(to.NumElements(), -1);
  CopyBox(slice, buffer.data(), box, to, sizeof(int32_t), copied.data());
  std::vector<int32_t> want(to.NumElements(), -1);
  UnpackBox(Fill(box).data(), box, to, sizeof(int32_t), want.data());
  EXPECT_EQ(copied, want);
}

TEST(SliceBoxesTest, SendAndReceiveBuffersAvoidCopiesWhenBackToBack) {
  const TensorSlice slice = Box({{0, 4}, {0, 5}, {0, 6}});
  const std::vector<int32_t> buffer = Fill(slice);
  std::vector<char> scratch;
  const std::vector<TensorSlice> rows = {Box({{1, 2}, {0, 5}, {0, 6}}),
                                         Box({{2, 4}, {0, 5}, {0, 6}})};
  EXPECT_EQ(SendBufferFor(slice, buffer.data(), rows, 4, &scratch), buffer.data() + 30);
  EXPECT_TRUE(scratch.empty());

  const std::vector<TensorSlice> columns = {Box({{0, 4}, {0, 5}, {3, 6}}),
                                            Box({{0, 4}, {0, 5}, {0, 3}})};
  const void* send = SendBufferFor(slice, buffer.data(), columns, 4, &scratch);
  ASSERT_EQ(send, static_cast<const void*>(scratch.data()));
  std::vector<int32_t> received(slice.NumElements(), -1);
  std::vector<char> receive_scratch;
  void* receive = ReceiveBufferFor(slice, received.data(), columns, 4, &receive_scratch);
  ASSERT_EQ(receive, static_cast<void*>(receive_scratch.data()));
  std::memcpy(receive, send, scratch.size());
  UnpackReceived(receive_scratch, columns, slice, 4, received.data());
  EXPECT_EQ(received, buffer);
}

}  // namespace
}  // namespace oneflow
