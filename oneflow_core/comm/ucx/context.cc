#include "oneflow_core/comm/ucx/context.h"

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"

namespace oneflow {
namespace ucx_backend {

absl::StatusOr<ucp_context_h> SharedContext() {
  static const absl::StatusOr<ucp_context_h>* context = [] {
    ucp_config_t* config = nullptr;
    ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
    if (status != UCS_OK) {
      return new absl::StatusOr<ucp_context_h>(absl::UnavailableError(absl::StrCat(
          "UCX could not initialize: reading its configuration failed: ",
          ucs_status_string(status))));
    }
    ucp_params_t params = {};
    params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED;
    // WAKEUP: a wait that outlasts its spin blocks on the worker's event fd (exchange.h).
    params.features = UCP_FEATURE_TAG | UCP_FEATURE_WAKEUP;
    // Workers of several communication threads share the context's resources.
    params.mt_workers_shared = 1;
    ucp_context_h handle = nullptr;
    status = ucp_init(&params, config, &handle);
    ucp_config_release(config);
    if (status != UCS_OK) {
      return new absl::StatusOr<ucp_context_h>(absl::UnavailableError(
          absl::StrCat("UCX could not initialize: ", ucs_status_string(status))));
    }
    return new absl::StatusOr<ucp_context_h>(handle);
  }();
  return *context;
}

}  // namespace ucx_backend
}  // namespace oneflow
