// Reading the Prometheus text format back in tests: the value of one series, or the sum of
// every series of a metric whose labels include the given ones.
#pragma once

#include <map>
#include <sstream>
#include <string>

namespace tenon::testing {

struct Sample {
  std::string name;
  std::map<std::string, std::string> labels;
  double value = 0;
};

// Parses `name{a="x",b="y"} value` lines; label values here never hold quotes or commas.
inline std::vector<Sample> ParseSamples(const std::string& text) {
  std::vector<Sample> out;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) {
    if (line.empty() || line[0] == '#') continue;
    Sample s;
    auto brace = line.find('{');
    auto space = line.rfind(' ');
    if (brace != std::string::npos && brace < space) {
      s.name = line.substr(0, brace);
      auto close = line.find('}', brace);
      std::string body = line.substr(brace + 1, close - brace - 1);
      for (std::size_t at = 0; at < body.size();) {
        auto eq = body.find('=', at);
        auto end = body.find('"', eq + 2);
        s.labels[body.substr(at, eq - at)] = body.substr(eq + 2, end - eq - 2);
        at = end + 2;  // Past the closing quote and the comma.
      }
    } else {
      s.name = line.substr(0, space);
    }
    s.value = std::stod(line.substr(space + 1));
    out.push_back(std::move(s));
  }
  return out;
}

// The sum over every series of `name` whose labels include `match`; -1 when there is none.
inline double Sum(const std::string& text, const std::string& name,
                  const std::map<std::string, std::string>& match = {}) {
  double sum = 0;
  bool any = false;
  for (const Sample& s : ParseSamples(text)) {
    if (s.name != name) continue;
    bool ok = true;
    for (const auto& [k, v] : match) {
      auto it = s.labels.find(k);
      ok = ok && it != s.labels.end() && it->second == v;
    }
    if (!ok) continue;
    sum += s.value;
    any = true;
  }
  return any ? sum : -1;
}

}  // namespace tenon::testing
