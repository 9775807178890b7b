// Text from a user's files put into an HTML page (`oneflow report`): every character with
// a meaning in HTML, in element text and in attribute values alike.
#ifndef TOOLS_CLI_HTML_ESCAPE_H_
#define TOOLS_CLI_HTML_ESCAPE_H_

#include <string>

#include "absl/strings/string_view.h"

namespace oneflow::cli {

// & < > " ' as &amp; &lt; &gt; &quot; &#39;; every other byte unchanged.
std::string HtmlEscape(absl::string_view text);

}  // namespace oneflow::cli

#endif  // TOOLS_CLI_HTML_ESCAPE_H_
