// The UCX settings this backend chooses for itself, by measurement, and what a run used.
//
// UCX reads its configuration from UCX_* environment variables. The backend changes a few
// of UCX's defaults in the configuration of the context for groups whose peers are all on
// other hosts (context.h; groups with a peer on this host keep UCX's defaults) where a
// measurement on the emulated hosts showed they cost the cross-node collectives time or
// CPU (docs/benchmarks.md, "UCX eager messages"); a variable set in the environment always
// wins, so `UCX_RNDV_THRESH=auto oneflow launch ...` measures UCX's own default again.
// The settings in effect are recorded in every multi-node run's metrics
// (`transport_settings`), so two runs can be told apart.
#ifndef ONEFLOW_CORE_COMM_UCX_SETTINGS_H_
#define ONEFLOW_CORE_COMM_UCX_SETTINGS_H_

#include <ucp/api/ucp.h>

#include <functional>
#include <string>
#include <vector>

#include "absl/status/status.h"

namespace oneflow {
namespace ucx_backend {

// One UCX configuration entry: `name` without the "UCX_" prefix, as ucp_config_modify
// takes it.
struct UcxSetting {
  std::string name;
  std::string value;
};

// The backend's own choices, in the order they are applied.
const std::vector<UcxSetting>& ChosenUcxSettings();

using GetEnvironment = std::function<const char*(const char*)>;

// Applies each chosen setting that the environment does not set (UCX_<name>) to `config`.
// INTERNAL naming the setting when UCX refuses one (this UCX does not know it: a bug
// here, since the choices are measured on the UCX this tree builds with).
absl::Status ApplyChosenUcxSettings(ucp_config_t* config, const GetEnvironment& get_environment);

// What a run used, for its metrics: each chosen setting as NAME=value, with
// " (environment)" after a value the environment set instead, then UCX_TLS when the
// environment sets it (which transports UCX may use), separated by "; ". Other UCX_*
// variables are not listed (UCX has hundreds). Example: "RNDV_THRESH=inf; TLS=tcp,self
// (environment)". Characters a JSON string would need escaped show as '?'.
std::string UcxSettingsText(const GetEnvironment& get_environment);

}  // namespace ucx_backend
}  // namespace oneflow

#endif  // ONEFLOW_CORE_COMM_UCX_SETTINGS_H_
