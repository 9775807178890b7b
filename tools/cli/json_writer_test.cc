#include "tools/cli/json_writer.h"

#include <cmath>
#include <limits>
#include <string>

#include "gtest/gtest.h"

namespace oneflow::cli {
namespace {

TEST(JsonWriterTest, NestedContainersAreIndentedInWriteOrder) {
  JsonWriter json;
  json.BeginObject();
  json.Key("zeta");
  json.Int(-3);
  json.Key("alpha");
  json.BeginArray();
  json.String("a");
  json.BeginObject();
  json.EndObject();
  json.BeginArray();
  json.EndArray();
  json.EndArray();
  json.Key("flags");
  json.BeginObject();
  json.Key("on");
  json.Bool(true);
  json.Key("none");
  json.Null();
  json.EndObject();
  json.EndObject();
  EXPECT_EQ(json.Finish(),
            "{\n"
            "  \"zeta\": -3,\n"
            "  \"alpha\": [\n"
            "    \"a\",\n"
            "    {},\n"
            "    []\n"
            "  ],\n"
            "  \"flags\": {\n"
            "    \"on\": true,\n"
            "    \"none\": null\n"
            "  }\n"
            "}\n");
}

TEST(JsonWriterTest, StringsAreEscaped) {
  EXPECT_EQ(JsonQuote("a\"b\\c\nd\te\x01 é"), "\"a\\\"b\\\\c\\nd\\te\\u0001 é\"");
}

TEST(JsonWriterTest, DoublesAreShortExactOrNull) {
  JsonWriter json;
  json.BeginArray();
  json.Double(12.5);
  json.Double(1e11);
  json.Double(1.0 / 3.0);
  json.Double(std::numeric_limits<double>::infinity());
  json.Double(std::nan(""));
  json.EndArray();
  EXPECT_EQ(json.Finish(), "[\n  12.5,\n  1e+11,\n  0.33333333333333331,\n  null,\n  null\n]\n");
}

TEST(JsonWriterTest, Int64StaysExact) {
  JsonWriter json;
  json.Int(int64_t{9007199254740993});  // 2^53 + 1: not a double
  EXPECT_EQ(json.Finish(), "9007199254740993\n");
}

}  // namespace
}  // namespace oneflow::cli
