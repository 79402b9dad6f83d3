// JSON logs: every line is one JSON object with level, time, logger and message; decision and
// command lines carry the sequence number that caused them; strings are escaped.
#include <gtest/gtest.h>
#include <spdlog/spdlog.h>

#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>

#include "adapters/metrics/logging.h"
#include "tests/metrics/demo_run.h"

namespace tenon {
namespace {

std::vector<nlohmann::json> Lines(const std::string& text) {
  std::vector<nlohmann::json> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) out.push_back(nlohmann::json::parse(line));
  return out;
}

// The demo's decision log: one line per decision and per command in the log (its Kubernetes
// Events aside, at debug), each with the seq of its cause, all parseable.
TEST(Logging, DecisionLinesCarryTheirCause) {
  const auto& run = testing::Demo();
  std::map<std::uint64_t, Seq> decision_cause;  // id -> cause, from the log.
  run.log->ScanDecisions(1, [&](const log::DecisionRecord& r) {
    Decision d = log::DecodeDecision(r.payload);
    decision_cause[d.id.value] = d.cause;
    return true;
  });
  std::uint64_t commands = 0;
  run.log->Scan(Seq{1}, Seq{0}, [&](const log::Record& r) {
    auto entry = log::DecodeEntry(r.payload);
    if (const auto* o = std::get_if<log::OutputRecord>(&entry)) {
      // Kubernetes Events repeat their decisions: logged at debug, not here.
      for (const Command& c : o->commands)
        commands += !std::holds_alternative<RecordKubeEvent>(c.body);
    }
    return true;
  });
  const std::regex decision_re("^decision #([0-9]+) ");
  std::size_t decisions_seen = 0, commands_seen = 0;
  const auto lines = Lines(run.log_lines.str());
  ASSERT_FALSE(lines.empty());
  for (const auto& line : lines) {
    ASSERT_TRUE(line.contains("level") && line.contains("time") && line.contains("logger") &&
                line.contains("message"))
        << line.dump();
    EXPECT_TRUE(std::regex_match(line["time"].get<std::string>(),
                                 std::regex(R"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z)")))
        << line.dump();
    const std::string message = line["message"];
    std::smatch m;
    if (std::regex_search(message, m, decision_re)) {
      ++decisions_seen;
      auto cause = decision_cause.at(std::stoull(m[1]));
      ASSERT_TRUE(line.contains("seq")) << line.dump();
      EXPECT_EQ(line["seq"].get<std::uint64_t>(), cause.value) << line.dump();
      EXPECT_EQ(line["level"], "info");
    } else if (message.rfind("command ", 0) == 0) {
      ++commands_seen;
      ASSERT_TRUE(line.contains("seq")) << line.dump();
      EXPECT_GT(line["seq"].get<std::uint64_t>(), 0u);
    }
  }
  EXPECT_EQ(decisions_seen, decision_cause.size());
  EXPECT_EQ(commands_seen, commands);
}

// Quotes, newlines, control characters and invalid UTF-8 come out as valid JSON; seq is set
// only inside a SeqScope, and nested scopes restore the outer one.
TEST(Logging, JsonEscapingAndSeqScope) {
  std::ostringstream out;
  metrics::ConfigureLogging("debug", true, &out);
  const std::string tricky = "quote \" backslash \\ newline \n tab \t bell \x07 bad \xff end";
  spdlog::info("{}", tricky);
  {
    metrics::SeqScope outer(41);
    {
      metrics::SeqScope inner(42);
      spdlog::warn("inner");
    }
    EXPECT_EQ(metrics::CurrentSeq(), 41u);
    spdlog::debug("outer");
  }
  EXPECT_EQ(metrics::CurrentSeq(), 0u);
  spdlog::error("after");
  metrics::ConfigureLogging("info", false);
  auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 4u) << out.str();
  EXPECT_EQ(lines[0]["message"].get<std::string>().substr(0, 47), tricky.substr(0, 47));
  EXPECT_FALSE(lines[0].contains("seq"));
  EXPECT_EQ(lines[0]["logger"], "tenon");
  EXPECT_EQ(lines[1]["seq"], 42);
  EXPECT_EQ(lines[1]["level"], "warn");
  EXPECT_EQ(lines[2]["seq"], 41);
  EXPECT_EQ(lines[2]["level"], "debug");
  EXPECT_FALSE(lines[3].contains("seq"));
  EXPECT_EQ(lines[3]["level"], "error");
}

// LOG_LEVEL: Karpenter's names only; a level filters what is below it.
TEST(Logging, Levels) {
  EXPECT_THROW(metrics::ConfigureLogging("verbose", true), std::invalid_argument);
  EXPECT_THROW(metrics::ParseLogLevel("INFO"), std::invalid_argument);
  EXPECT_EQ(metrics::ParseLogLevel("warn"), spdlog::level::warn);
  std::ostringstream out;
  metrics::ConfigureLogging("warn", true, &out);
  spdlog::info("hidden");
  spdlog::warn("shown");
  metrics::ConfigureLogging("info", false);
  auto lines = Lines(out.str());
  ASSERT_EQ(lines.size(), 1u);
  EXPECT_EQ(lines[0]["message"], "shown");
}

}  // namespace
}  // namespace tenon
