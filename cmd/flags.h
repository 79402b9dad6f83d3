// Checks of command-line values that CLI11 runs on the text, before converting it: CLI11 turns
// "-5" and "18446744073709551616" into an unsigned number without a word (wrapped or clamped).
#pragma once

#include <CLI/CLI.hpp>
#include <charconv>
#include <cstdint>
#include <filesystem>
#include <string>

#include "reducers/core.h"

namespace tenon::cmd {

// A whole decimal number from 1 to 2^64 - 1: no sign, no spaces, nothing after it.
inline CLI::Validator PositiveCount() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::uint64_t value = 0;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec == std::errc::result_out_of_range) return "'" + text + "' is too large";
        if (ec != std::errc() || end != text.data() + text.size() || value == 0) {
          return "'" + text + "' is not a whole number of 1 or more";
        }
        return "";
      },
      "POSITIVE");
}

// A time argument given but empty ("--until ''") is a mistake, not "no time".
inline CLI::Validator NonEmptyTime() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return text.empty() ? "an empty time: give one such as 2026-01-01T02:14:09Z or 02:14:09"
                            : "";
      },
      "TIME");
}

// A disruption method's name, as the log records it.
inline CLI::Validator MethodName() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        return ParseDisruptionMethod(text)
                   ? ""
                   : "not a disruption method: Emptiness, Drift, Expiration, SoftExpiration, "
                     "Interruption, SingleNodeConsolidation or MultiNodeConsolidation";
      },
      "METHOD");
}

// A whole number from 0 to 100.
inline CLI::Validator Percent() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        int value = -1;
        auto [end, ec] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (ec != std::errc() || end != text.data() + text.size() || value < 0 || value > 100) {
          return "'" + text + "' is not a whole number from 0 to 100";
        }
        return "";
      },
      "PERCENT");
}

// A file or a folder that exists (a scenario, conformance cases).
inline CLI::Validator ExistingFileOrFolder() {
  return CLI::Validator(
      [](std::string& text) -> std::string {
        std::error_code ec;
        return std::filesystem::exists(text, ec) ? "" : "no file or folder '" + text + "'";
      },
      "PATH");
}

}  // namespace tenon::cmd
