// The HTML plan viewer's page as text: names that would break out of the data's <script>
// element are escaped and round-trip through JSON, the output is deterministic, and the
// page fetches nothing. tools/cli/inspect_html_browser_test.sh runs it in a browser.
#include "tools/cli/inspect_html.h"

#include <string>

#include "absl/strings/match.h"
#include "google/protobuf/struct.pb.h"
#include "google/protobuf/util/json_util.h"
#include "gtest/gtest.h"
#include "tools/cli/sample_plan.h"

namespace oneflow::cli {
namespace {

constexpr char kNasty[] = "mm</script><!--\"'&<nasty>x</nasty>\\";

int Count(const std::string& text, const std::string& what) {
  int count = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++count;
  return count;
}

// The JSON between <script type="application/json" id="plan-data"> and its </script>.
std::string DataBlob(const std::string& html) {
  const std::string open = "id=\"plan-data\">";
  const size_t begin = html.find(open);
  EXPECT_NE(begin, std::string::npos);
  const size_t end = html.find("</script>", begin);
  return html.substr(begin + open.size(), end - begin - open.size());
}

TEST(InspectHtmlTest, EscapesNamesInsideTheScriptElement) {
  proto::Plan plan = SampleDataParallelPlan();
  plan.mutable_job()->set_name(kNasty);
  plan.mutable_op_sbps(0)->set_op_name(kNasty);
  plan.mutable_boxings(0)->set_tensor(kNasty);
  plan.mutable_devices(0)->mutable_registers(0)->set_tensor(kNasty);
  const absl::StatusOr<std::string> html = InspectPlanHtml(plan);
  ASSERT_TRUE(html.ok()) << html.status();
  // Three script elements (error counter, data, main script): the data closes none early.
  EXPECT_EQ(Count(*html, "</script"), 3);
  EXPECT_EQ(Count(*html, "<!--"), 0);
  EXPECT_EQ(Count(*html, "<nasty>"), 0);
  const std::string blob = DataBlob(*html);
  EXPECT_EQ(Count(blob, "<"), 0);
  google::protobuf::Struct data;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(blob, &data).ok()) << blob.substr(0, 400);
  EXPECT_EQ(data.fields().at("job").string_value(), kNasty);
  bool found = false;
  for (const google::protobuf::Value& s : data.fields().at("strings").list_value().values()) {
    found = found || s.string_value() == kNasty;
  }
  EXPECT_TRUE(found) << "the op name is not in the string table";
}

TEST(InspectHtmlTest, IsSelfContainedAndDeterministic) {
  const proto::Plan plan = SampleDataParallelPlan();
  const absl::StatusOr<std::string> first = InspectPlanHtml(plan);
  const absl::StatusOr<std::string> second = InspectPlanHtml(plan);
  ASSERT_TRUE(first.ok()) << first.status();
  EXPECT_EQ(*first, *second);
  EXPECT_TRUE(absl::StartsWith(*first, "<!DOCTYPE html>"));
  EXPECT_TRUE(absl::EndsWith(*first, "</html>\n"));
  for (const char* external : {"http://", "https://", " src=", "<link", "@import", "url(/", "url(h"}) {
    EXPECT_EQ(Count(*first, external), 0) << external;
  }
}

TEST(InspectHtmlTest, DataHasEveryDeviceWithItsFiguresAndLifetimes) {
  const proto::Plan plan = SampleDataParallelPlan();
  const PlanIndex index(plan);
  google::protobuf::Struct data;
  ASSERT_TRUE(google::protobuf::util::JsonStringToMessage(PlanViewerData(plan, index), &data).ok());
  const auto& devices = data.fields().at("devices").list_value().values();
  ASSERT_EQ(devices.size(), 2u);
  const auto& tables = data.fields().at("tables").list_value().values();
  for (int d = 0; d < 2; ++d) {
    const auto& device = devices[d].struct_value().fields();
    EXPECT_EQ(device.at("peak_bytes").number_value(), plan.devices(d).peak_bytes());
    EXPECT_EQ(device.at("lower_bound_bytes").number_value(), plan.devices(d).lower_bound_bytes());
    const auto& actors = tables[static_cast<int>(device.at("actors").number_value())].list_value().values();
    EXPECT_EQ(actors.size(), 6u * plan.devices(d).actors_size());
    const auto& registers = tables[static_cast<int>(device.at("registers").number_value())].list_value().values();
    ASSERT_EQ(registers.size(), 10u * plan.devices(d).registers_size());
    for (int r = 0; r < plan.devices(d).registers_size(); ++r) {
      const int64_t first = static_cast<int64_t>(registers[r * 10 + 2].number_value());
      const int64_t last = static_cast<int64_t>(registers[r * 10 + 3].number_value());
      EXPECT_LE(0, first);
      EXPECT_LE(first, last);
      EXPECT_LT(last, plan.devices(d).actors_size());
    }
  }
}

}  // namespace
}  // namespace oneflow::cli
