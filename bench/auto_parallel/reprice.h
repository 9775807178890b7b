// prediction_bench --reprice=FILE: a sweep the bench printed, priced again by this build's
// model with the run's own final terms, nothing measured. So a change of the model is judged on measurements
// already taken (a quiet run's, say) with the terms that run fitted, and the layouts whose
// terms the change does not touch show that the re-pricing is faithful (their predictions
// come out as recorded).
#ifndef BENCH_AUTO_PARALLEL_REPRICE_H_
#define BENCH_AUTO_PARALLEL_REPRICE_H_

#include <cstdint>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "examples/gpt/gpt_model.h"

namespace oneflow::prediction {

// Prices the measured layouts of the `devices` sweep in `lines` (prediction_bench's output,
// read from `file`) again with the run's calibration, model rates, shared-host fit and
// least call cost, and prints an auto_parallel_reprice line per layout and an
// auto_parallel_reprice_summary. INVALID_ARGUMENT naming `file` when it holds no such sweep
// or a line lacks a field. The cached memory rate (sbp/compute_cost.h) is the run's
// calibration line's when it has one; for a run recorded before it existed, the
// "memory_cached" line of the calibration file `memory_cached_file` (measured on this
// machine since; "": none, every byte at the memory rate), scaled like the run's memory
// rate (its model rates over its calibration).
absl::Status RepriceCluster(const examples::GptConfig& config, int64_t devices, int64_t max_micro_batches,
                            const std::vector<std::string>& lines, const std::string& file,
                            const std::string& memory_cached_file);

}  // namespace oneflow::prediction

#endif  // BENCH_AUTO_PARALLEL_REPRICE_H_
