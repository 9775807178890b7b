#include "tools/launcher/address.h"

#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"

namespace oneflow::launcher {

absl::StatusOr<HostPort> ParseHostPort(absl::string_view text, absl::string_view what) {
  auto invalid = [&](absl::string_view why) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, "='", text, "': ", why, "; expected HOST:PORT, e.g. 127.0.0.1:5001"));
  };
  const size_t colon = text.rfind(':');
  if (colon == absl::string_view::npos) return invalid("no ':PORT'");
  HostPort result;
  result.host = std::string(text.substr(0, colon));
  if (result.host.empty()) return invalid("no host before ':'");
  // An IPv6 host has colons of its own and must be bracketed to tell them from the port's.
  const bool bracketed = result.host.front() == '[';
  if (bracketed != (result.host.back() == ']') ||
      (!bracketed && result.host.find(':') != std::string::npos)) {
    return invalid("an IPv6 host must be in brackets, e.g. [::1]:5001");
  }
  const absl::string_view port_text = text.substr(colon + 1);
  if (port_text.empty() || !absl::SimpleAtoi(port_text, &result.port) || result.port < 0 ||
      result.port > 65535) {
    return invalid(absl::StrCat("port '", port_text, "' is not a number in 0..65535"));
  }
  return result;
}

bool IsWildcardHost(absl::string_view host) {
  return host.empty() || host == "0.0.0.0" || host == "[::]" || host == "::";
}

}  // namespace oneflow::launcher
