#include "oneflow_core/comm/ucx/settings.h"

#include "absl/strings/str_cat.h"
#include "absl/strings/str_join.h"

namespace oneflow {
namespace ucx_backend {
namespace {

std::string VariableOf(const std::string& name) { return absl::StrCat("UCX_", name); }

// An environment value as the metrics line shows it: it goes into a JSON string as is,
// so what would need escaping there (quotes, backslashes, control bytes) becomes '?'.
std::string Printable(const char* value) {
  std::string text(value);
  for (char& c : text) {
    if (c < 0x20 || c > 0x7e || c == '"' || c == '\\') c = '?';
  }
  return text;
}

}  // namespace

const std::vector<UcxSetting>& ChosenUcxSettings() {
  static const std::vector<UcxSetting>* settings = new std::vector<UcxSetting>{
      // Eager messages at every size. The schedules cut large transfers into 1 MiB
      // segments (gloo/schedules.h); over TCP UCX's default sends those by rendezvous, a
      // request-to-send and a reply before the data, i.e. one more round trip and one more
      // wake-up of the receiving communication thread per segment. Eager sends the data at
      // once into a receive the schedule posted up front.
      {"RNDV_THRESH", "inf"},
  };
  return *settings;
}

absl::Status ApplyChosenUcxSettings(ucp_config_t* config, const GetEnvironment& get_environment) {
  for (const UcxSetting& setting : ChosenUcxSettings()) {
    if (get_environment(VariableOf(setting.name).c_str()) != nullptr) continue;
    const ucs_status_t status = ucp_config_modify(config, setting.name.c_str(), setting.value.c_str());
    if (status != UCS_OK) {
      return absl::InternalError(absl::StrCat("UCX refused the backend's setting ", setting.name, "=",
                                              setting.value, ": ", ucs_status_string(status),
                                              " (set ", VariableOf(setting.name), " to override it)"));
    }
  }
  return absl::OkStatus();
}

std::string UcxSettingsText(const GetEnvironment& get_environment) {
  std::vector<std::string> parts;
  for (const UcxSetting& setting : ChosenUcxSettings()) {
    const char* set = get_environment(VariableOf(setting.name).c_str());
    parts.push_back(set != nullptr ? absl::StrCat(setting.name, "=", Printable(set), " (environment)")
                                   : absl::StrCat(setting.name, "=", setting.value));
  }
  if (const char* transports = get_environment("UCX_TLS"); transports != nullptr) {
    parts.push_back(absl::StrCat("TLS=", Printable(transports), " (environment)"));
  }
  return absl::StrJoin(parts, "; ");
}

}  // namespace ucx_backend
}  // namespace oneflow
