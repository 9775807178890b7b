// The gpt as --auto_parallel's search sees it, for prediction_bench's sweep and its
// --reprice: the profile with its acts and tp boxings counted from the model's own plans,
// and the cluster the examples' driver gives the search before any calibration.
#ifndef BENCH_AUTO_PARALLEL_GPT_PROFILE_H_
#define BENCH_AUTO_PARALLEL_GPT_PROFILE_H_

#include <cstdint>

#include "absl/status/statusor.h"
#include "compiler/auto_parallel/model_profile.h"
#include "compiler/auto_parallel/search.h"
#include "examples/common/compile_driver.h"
#include "examples/gpt/gpt_model.h"

namespace oneflow::prediction {

// The gpt's profile with its acts counted, per family of layouts of `devices` devices
// (micro-batches up to `max_micro_batches`), and tp priced as its probe plan of each tp
// degree boxes it (tp = 2, and the degrees above of one node), as --auto_parallel counts them, every plan compiled with `settings` (--sbp_search
// searches the probes as --auto_parallel --sbp_search does). Prints an
// auto_parallel_act_families line.
absl::StatusOr<auto_parallel::ModelProfile> CountedProfile(const examples::GptConfig& config, int64_t devices,
                                                             int64_t max_micro_batches,
                                                             const examples::CompileSettings& settings = {});

// The cluster of `devices` devices on one node as the examples' driver gives it to the
// search (compile_driver's options), no calibration terms.
absl::StatusOr<auto_parallel::SearchOptions> UncalibratedOptions(int64_t devices, int64_t max_micro_batches);

}  // namespace oneflow::prediction

#endif  // BENCH_AUTO_PARALLEL_GPT_PROFILE_H_
