// The groups of a plan's collectives: the distinct member lists (CollectiveDef.group, in
// rank order), numbered in the order of their first collective in Plan.collectives.
//
// A device's collectives of one group run in the same order on every member (one
// communicator, one stream: CollectiveDef.stream), so counting a device's acts within a
// group numbers the same call alike on every member. Counting them across the device's
// groups does not: with several communication streams the streams' acts interleave
// differently on each member, and members with other groups of their own (pipeline
// stages, tp pairs) count those too. The flight recorder numbers its entries per group
// (FlightEntry.group_sequence), and the worker's status file reports each device's
// progress per group by these indices (DeviceProgress.groups), which the launch's
// progress monitor maps back through the same plan (docs/diagnosis.md).
#ifndef PLAN_COLLECTIVE_GROUPS_H_
#define PLAN_COLLECTIVE_GROUPS_H_

#include <cstdint>
#include <string>
#include <vector>

#include "proto/plan.pb.h"

namespace oneflow {

struct CollectiveGroups {
  // Group -> "devices [0:0, 1:0]" (node:device, in rank order).
  std::vector<std::string> names;
  // Group -> its members as indices into plan.devices() (members the plan does not list
  // are left out).
  std::vector<std::vector<int64_t>> members;
  // Plan.collectives index -> its group.
  std::vector<int> of_collective;
  // Plan device index -> the groups it is a member of, ascending.
  std::vector<std::vector<int>> of_device;
};

CollectiveGroups CollectiveGroupsOf(const proto::Plan& plan);

}  // namespace oneflow

#endif  // PLAN_COLLECTIVE_GROUPS_H_
