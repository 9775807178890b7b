// The tail of the `oneflow inspect --format=html` page (PlanViewerPageTail): it closes
// the JSON blob's <script> element and adds the viewer's script, which lives in
// inspect_html_script.js (a file of its own so that it reads, lints and diffs as
// JavaScript) and is embedded at build time as kPlanViewerScript. How it works: the top
// of inspect_html_page.cc and docs/inspect.md, "The plan viewer".
#include <string>

#include "absl/strings/str_cat.h"
#include "tools/cli/inspect_html.h"
#include "tools/cli/inspect_html_script_js.h"

namespace oneflow::cli {

absl::string_view PlanViewerPageTail() {
  static const std::string* const tail =
      new std::string(absl::StrCat("</script>\n<script>\n", kPlanViewerScript, "</script>\n</body>\n</html>\n"));
  return *tail;
}

}  // namespace oneflow::cli
