#include "plan/collective_groups.h"

#include <map>
#include <utility>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {

CollectiveGroups CollectiveGroupsOf(const proto::Plan& plan) {
  CollectiveGroups groups;
  std::map<std::pair<int64_t, int64_t>, int64_t> index_of;  // (node, device) -> plan index
  for (int d = 0; d < plan.devices_size(); ++d) {
    index_of[{plan.devices(d).device().node(), plan.devices(d).device().device()}] = d;
  }
  groups.of_device.resize(plan.devices_size());
  std::map<std::string, int> known;
  for (const proto::CollectiveDef& collective : plan.collectives()) {
    std::vector<std::string> names;
    for (const proto::DeviceId& member : collective.group()) names.push_back(absl::StrCat(member.node(), ":", member.device()));
    const std::string name = absl::StrCat("devices [", absl::StrJoin(names, ", "), "]");
    const auto [it, added] = known.emplace(name, static_cast<int>(groups.names.size()));
    groups.of_collective.push_back(it->second);
    if (!added) continue;
    groups.names.push_back(name);
    std::vector<int64_t>& members = groups.members.emplace_back();
    for (const proto::DeviceId& member : collective.group()) {
      const auto found = index_of.find({member.node(), member.device()});
      if (found == index_of.end()) continue;
      members.push_back(found->second);
      std::vector<int>& of_device = groups.of_device[found->second];
      if (of_device.empty() || of_device.back() != it->second) of_device.push_back(it->second);
    }
  }
  return groups;
}

}  // namespace oneflow
