#include "oneflow_core/comm/ucx/context.h"

#include <ucs/debug/log_def.h>
#include <unistd.h>

#include <cstdarg>
#include <cstdio>
#include <cstdlib>
#include <mutex>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "oneflow_core/comm/ucx/settings.h"

namespace oneflow {
namespace ucx_backend {
namespace {

// UCX logs a transport failure it was not asked to handle (a peer that died: CMA's
// process_vm_readv answers ESRCH, TCP's connection resets) at level FATAL, and its default
// log handler then aborts this process. Handling them with UCP_ERR_HANDLING_MODE_PEER is
// not open to us (this UCX refuses synchronous sends in that mode, mesh.h), and an abort
// would make a survivor look like the failure: a launch would report the survivor's
// SIGABRT instead of the peer that died. The call sites that log at FATAL through the log
// handlers return an error status right after (uct_base_iface_failure_log_level), so this
// handler, called before UCX's own, prints the message as a warning and stops there: the
// operation fails, the exchange sees a broken request and fails the group as a lost
// connection, naming the peer (mesh.h). UCX's assertion failures and ucs_fatal() do not
// pass through log handlers and still abort.
ucs_log_func_rc_t SurviveTransportFailure(const char* file, unsigned line, const char* /*function*/,
                                          ucs_log_level_t level, const ucs_log_component_config_t* /*config*/,
                                          const char* format, va_list arguments) {
  if (level != UCS_LOG_LEVEL_FATAL) return UCS_LOG_FUNC_RC_CONTINUE;
  char message[512];
  vsnprintf(message, sizeof(message), format, arguments);
  char text[768];
  const int length = snprintf(text, sizeof(text), "UCX transport failure at %s:%u (the group fails instead of aborting): %s\n",
                              file, line, message);
  // write(2): no allocation or stdio lock on a path UCX may take from a progress call.
  if (length > 0) (void)!write(STDERR_FILENO, text, static_cast<size_t>(length) < sizeof(text) ? length : sizeof(text) - 1);
  return UCS_LOG_FUNC_RC_STOP;
}

absl::StatusOr<ucp_context_h>* NewContext(PeerPlacement placement) {
  ucp_config_t* config = nullptr;
  ucs_status_t status = ucp_config_read(nullptr, nullptr, &config);
  if (status != UCS_OK) {
    return new absl::StatusOr<ucp_context_h>(absl::UnavailableError(
        absl::StrCat("UCX could not initialize: reading its configuration failed: ", ucs_status_string(status))));
  }
  if (placement == PeerPlacement::kAllOnOtherHosts) {
    // The backend's measured choices, under whatever the environment sets (settings.h).
    const absl::Status chosen = ApplyChosenUcxSettings(config, [](const char* name) { return std::getenv(name); });
    if (!chosen.ok()) {
      ucp_config_release(config);
      return new absl::StatusOr<ucp_context_h>(
          absl::UnavailableError(absl::StrCat("UCX could not initialize: ", chosen.message())));
    }
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
    return new absl::StatusOr<ucp_context_h>(
        absl::UnavailableError(absl::StrCat("UCX could not initialize: ", ucs_status_string(status))));
  }
  // After ucp_init, which pushes UCX's default handler: handlers run newest first. After
  // each context's (at most two): the handler stops the dispatch, so a second copy of it
  // further down is never reached.
  ucs_log_push_handler(SurviveTransportFailure);
  return new absl::StatusOr<ucp_context_h>(handle);
}

}  // namespace

absl::StatusOr<ucp_context_h> SharedContext(PeerPlacement placement) {
  static const absl::StatusOr<ucp_context_h>* all_on_other_hosts = nullptr;
  static const absl::StatusOr<ucp_context_h>* some_on_this_host = nullptr;
  static std::once_flag other_hosts_once, this_host_once;
  if (placement == PeerPlacement::kAllOnOtherHosts) {
    std::call_once(other_hosts_once, [] { all_on_other_hosts = NewContext(PeerPlacement::kAllOnOtherHosts); });
    return *all_on_other_hosts;
  }
  std::call_once(this_host_once, [] { some_on_this_host = NewContext(PeerPlacement::kSomeOnThisHost); });
  return *some_on_this_host;
}

}  // namespace ucx_backend
}  // namespace oneflow
