#include "oneflow_core/comm/ucx/settings.h"

#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <map>
#include <string>

#include "absl/strings/str_cat.h"
#include "gmock/gmock.h"
#include "gtest/gtest.h"

namespace oneflow::ucx_backend {
namespace {

// An environment of exactly `variables` (the process's own is not read).
GetEnvironment EnvironmentOf(std::map<std::string, std::string> variables) {
  return [variables = std::move(variables)](const char* name) -> const char* {
    const auto found = variables.find(name);
    return found == variables.end() ? nullptr : found->second.c_str();
  };
}

// UCX's configuration as it prints it ("UCX_NAME=value" lines).
std::string Printed(const ucp_config_t* config) {
  char* text = nullptr;
  size_t length = 0;
  FILE* stream = open_memstream(&text, &length);
  ucp_config_print(config, stream, nullptr, UCS_CONFIG_PRINT_CONFIG);
  std::fclose(stream);
  std::string printed(text, length);
  std::free(text);
  return printed;
}

class UcxSettingsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    // The process's environment must not decide what the defaults read as.
    unsetenv("UCX_RNDV_THRESH");
    ASSERT_EQ(ucp_config_read(nullptr, nullptr, &config_), UCS_OK);
  }
  void TearDown() override { ucp_config_release(config_); }
  ucp_config_t* config_ = nullptr;
};

TEST_F(UcxSettingsTest, ChoosesEagerMessagesAtEverySize) {
  ASSERT_THAT(ChosenUcxSettings(), ::testing::SizeIs(1));
  EXPECT_EQ(ChosenUcxSettings()[0].name, "RNDV_THRESH");
  EXPECT_EQ(ChosenUcxSettings()[0].value, "inf");
}

// UCX's own default is a threshold it picks per transport ("auto"); the chosen setting
// replaces it in the configuration the context is made from.
TEST_F(UcxSettingsTest, AppliesTheChoiceToUcxConfiguration) {
  EXPECT_THAT(Printed(config_), ::testing::HasSubstr("UCX_RNDV_THRESH=auto\n"));
  ASSERT_TRUE(ApplyChosenUcxSettings(config_, EnvironmentOf({})).ok());
  EXPECT_THAT(Printed(config_), ::testing::HasSubstr("UCX_RNDV_THRESH=inf\n"));
}

// A variable in the environment wins: the configuration keeps what UCX read from it.
TEST_F(UcxSettingsTest, TheEnvironmentOverridesTheChoice) {
  setenv("UCX_RNDV_THRESH", "8k", 1);
  ucp_config_t* from_environment = nullptr;
  ASSERT_EQ(ucp_config_read(nullptr, nullptr, &from_environment), UCS_OK);
  unsetenv("UCX_RNDV_THRESH");
  ASSERT_TRUE(ApplyChosenUcxSettings(from_environment, EnvironmentOf({{"UCX_RNDV_THRESH", "8k"}})).ok());
  EXPECT_THAT(Printed(from_environment), ::testing::HasSubstr("UCX_RNDV_THRESH=8K\n"));
  ucp_config_release(from_environment);
}

TEST_F(UcxSettingsTest, TextNamesTheChoicesAndWhatTheEnvironmentSet) {
  EXPECT_EQ(UcxSettingsText(EnvironmentOf({})), "RNDV_THRESH=inf");
  EXPECT_EQ(UcxSettingsText(EnvironmentOf({{"UCX_RNDV_THRESH", "auto"}, {"UCX_TLS", "tcp,self"}})),
            "RNDV_THRESH=auto (environment); TLS=tcp,self (environment)");
  // It goes into a JSON string unescaped.
  EXPECT_EQ(UcxSettingsText(EnvironmentOf({{"UCX_TLS", "tcp\"\\\n"}})),
            "RNDV_THRESH=inf; TLS=tcp??? (environment)");
}

}  // namespace
}  // namespace oneflow::ucx_backend
