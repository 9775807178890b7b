// Send/recv: move a tensor between two different placements (pipeline stages, a cpu
// stage feeding a cuda stage, a re-shaped hierarchy over the same devices).
//
// Each destination device receives the part of its destination slice that it does not
// already hold: from the same device (same device type and id) it is a local copy and
// costs nothing; otherwise it comes from a source device of the same node (intra-node
// bandwidth) or of another node (inter-node bandwidth). When the source has B axes,
// several source devices hold each element; the source devices with equal coordinates
// on the B axes form a "replica" that holds every element once, and each destination
// device picks the replica that is fastest for it (ties: the lowest replica).
// Destination P axes: the device at coordinate 0 of every P axis receives its slice,
// the others start from zeros, so the sum is the value.
//
// The source must have no P axis (a partial value would need a reduction on the way);
// PlanBoxing converts it first. Cost: bytes_per_device is the most any destination
// device receives, seconds the longest any destination device takes (its intra-node
// bytes over the intra-node bandwidth plus its inter-node bytes over the inter-node
// bandwidth). Senders' outgoing bandwidth is not modelled: one B source feeding many
// destinations is charged as if each had its own link.
#ifndef SBP_BOXING_SEND_RECV_H_
#define SBP_BOXING_SEND_RECV_H_

#include "oneflow_core/placement.h"
#include "oneflow_core/sbp.h"
#include "sbp/boxing/context.h"
#include "sbp/boxing_plan.h"

namespace oneflow {
namespace boxing {

// The kSendRecv step from `src` on `src_placement` to `dst` on `dst_placement`.
// Preconditions: both fit context.logical and their hierarchies; `src` has no P axis.
BoxingStep MakeSendRecvStep(const BoxingContext& context, const NdSbp& src,
                            const Placement& src_placement, const NdSbp& dst,
                            const Placement& dst_placement);

}  // namespace boxing
}  // namespace oneflow

#endif  // SBP_BOXING_SEND_RECV_H_
