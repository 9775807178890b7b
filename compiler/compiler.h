// The graph compiler's entry point: a logical Job and a cluster description in, a
// per-device Plan out.
//
//   CompileOptions options;
//   options.cluster = cluster;  // nodes x devices and link bandwidths
//   OF_ASSIGN_OR_RETURN(proto::Plan plan, Compile(job, options));
//
// Compile runs the pass pipeline of pass_pipeline.h (shape inference, autograd,
// optimizer, SBP choice, boxing insertion, lowering, actor graph, collective ordering,
// memory planning, plan emission) with the verifier between passes. The same job and
// options always give a byte-identical plan (SerializePlan in plan_io.h).
#ifndef COMPILER_COMPILER_H_
#define COMPILER_COMPILER_H_

#include "absl/status/statusor.h"
#include "compiler/compile_options.h"
#include "proto/job.pb.h"
#include "proto/plan.pb.h"
#include "sbp/link_model.h"

namespace oneflow {

// The cost model's links of a cluster description: its bandwidths and latencies.
LinkModel LinkModelOf(const proto::Cluster& cluster);

struct Compilation;

// The state Compile starts the pass pipeline from: the job, the options (checked), the
// cost model's links and the cluster's and job's default placements. Tests that run a
// prefix of the pipeline (compiler/passes/pass_test_util.h) start from it too.
absl::Status PrepareCompilation(const proto::Job& job, const CompileOptions& options, Compilation* compilation);

absl::StatusOr<proto::Plan> Compile(const proto::Job& job, const CompileOptions& options);

}  // namespace oneflow

#endif  // COMPILER_COMPILER_H_
