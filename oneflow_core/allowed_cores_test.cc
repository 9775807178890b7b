// AllowedCores counts the affinity mask, so narrowing the mask narrows the count.
#include "oneflow_core/allowed_cores.h"

#include <sched.h>

#include "gtest/gtest.h"

namespace oneflow {
namespace {

TEST(AllowedCores, CountsTheAffinityMask) {
  cpu_set_t original;
  CPU_ZERO(&original);
  ASSERT_EQ(sched_getaffinity(0, sizeof(original), &original), 0);
  EXPECT_EQ(AllowedCores(), CPU_COUNT(&original));
  // One CPU of the mask: the count follows (this thread only; restored below).
  int first = 0;
  while (!CPU_ISSET(first, &original)) ++first;
  cpu_set_t one;
  CPU_ZERO(&one);
  CPU_SET(first, &one);
  ASSERT_EQ(sched_setaffinity(0, sizeof(one), &one), 0);
  EXPECT_EQ(AllowedCores(), 1);
  ASSERT_EQ(sched_setaffinity(0, sizeof(original), &original), 0);
}

}  // namespace
}  // namespace oneflow
