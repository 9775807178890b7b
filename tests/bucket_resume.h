// The check the compressed-bucket tests share: a bucketed plan trains to its unbucketed
// plan's losses bit for bit, and resumes from the unbucketed run's checkpoint (error-feedback
// residuals included: no residual warning) to the same losses within 1e-4.
#ifndef TESTS_BUCKET_RESUME_H_
#define TESTS_BUCKET_RESUME_H_

#include <cstdint>
#include <string>

#include "proto/plan.pb.h"

namespace oneflow::testing {

// Trains `unbucketed` for `iterations` with a checkpoint after iteration `checkpoint_at`
// (under ::testing::TempDir()/`directory_name`), trains `bucketed` from scratch and from that
// checkpoint, and records a test failure where the losses differ.
void ExpectBucketedTrainsAndResumesLikeUnbucketed(const proto::Plan& unbucketed, const proto::Plan& bucketed,
                                                  int64_t iterations, int64_t checkpoint_at,
                                                  const std::string& directory_name);

}  // namespace oneflow::testing

#endif  // TESTS_BUCKET_RESUME_H_
