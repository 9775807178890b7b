// A small hand-built plan for tests of the CLI, written from plan.proto alone (the
// compiler that will emit real plans is written separately).
//
// One SGD step of y = x * w, data parallel over cpu{0:0-1} (1 node x 2 devices):
//   ops      mm        matmul(a=x, b=w) -> out=y           a: S(0), b: B -> out: S(0)
//            loss_grad mse_grad(pred=y, target=t) -> grad=y_grad  all S(0)
//            mm_grad   matmul(a=x, b=y_grad) -> out=w_grad  a: S(0), b: S(0) -> out: P
//            sgd       sgd_update(param=w, grad=w_grad)     grad: B, param: B -> -
//   boxing 0 w_grad [32, 16] f32 from mm_grad (P) to sgd (B): one all_reduce,
//            collective 0, 2048 B per device, 4096 B per iteration.
//   devices  0 (0:0) and 1 (0:1), 7 actors and 7 registers each (actors 0-6 and
//            10-16; registers 0-6 on each): w persistent, the others with 2 slots in
//            an arena of 2 slot copies. It passes the full plan verifier and is sealed.
#ifndef TOOLS_CLI_SAMPLE_PLAN_H_
#define TOOLS_CLI_SAMPLE_PLAN_H_

#include "proto/plan.pb.h"

namespace oneflow::cli {

proto::Plan SampleDataParallelPlan();

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_SAMPLE_PLAN_H_
