// What the cost model refuses to price (layout_check.h): each error names the layout and
// what would be valid; a layout it accepts passes.
#include "compiler/auto_parallel/layout_check.h"

#include <string>

#include "gtest/gtest.h"

namespace oneflow::auto_parallel {
namespace {

ModelProfile FourBlocks() {
  ModelProfile profile;
  profile.job_name = "gpt";
  profile.batch_rows = 8;
  profile.stageable_units = 4;
  profile.tp_hinted = true;
  return profile;
}

PriceOptions FourDevices() {
  PriceOptions options;
  options.cluster.set_num_nodes(2);
  options.cluster.set_devices_per_node(2);
  return options;
}

proto::AutoParallelLayout Layout(int64_t dp, int64_t tp, int64_t pp, int32_t zero, bool zero3_kept = false) {
  proto::AutoParallelLayout layout;
  layout.set_dp(dp);
  layout.set_tp(tp);
  layout.set_pp(pp);
  layout.set_micro_batches(1);
  layout.set_zero(zero);
  layout.set_zero3_kept(zero3_kept);
  return layout;
}

std::string Error(const proto::AutoParallelLayout& layout) {
  return std::string(CheckLayout(FourBlocks(), FourDevices(), layout).message());
}

TEST(LayoutCheckTest, ZeroThreeKeepingItsCopiesIsPricedOnlyAtStageThree) {
  EXPECT_TRUE(CheckLayout(FourBlocks(), FourDevices(), Layout(4, 1, 1, 3, true)).ok());
  EXPECT_EQ(Error(Layout(4, 1, 1, 2, true)),
            "dp=4 tp=1 pp=1 micro_batches=1 zero=2 zero3_regather=false recompute=none: zero3_regather=false keeps "
            "ZeRO-3's gathered parameters for backward; it needs zero=3");
}

TEST(LayoutCheckTest, DegreesUseTheClustersDevicesAndTheModelsBlocks) {
  EXPECT_TRUE(CheckLayout(FourBlocks(), FourDevices(), Layout(2, 2, 1, 0)).ok());
  EXPECT_EQ(Error(Layout(2, 1, 1, 0)), "dp=2 tp=1 pp=1 micro_batches=1 zero=0 recompute=none is 2 devices; the cluster has 4");
  EXPECT_EQ(Error(Layout(1, 1, 4, 1)), "dp=1 tp=1 pp=4 micro_batches=1 zero=1 recompute=none: ZeRO stages 1-3 need dp > 1");
}

}  // namespace
}  // namespace oneflow::auto_parallel
