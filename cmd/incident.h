// tenon's incident commands (replay, audit, explain, ...): flags and printing over replay/.
#pragma once

#include <CLI/CLI.hpp>

#include <memory>
#include <optional>

namespace tenon::cmd {

struct IncidentCommands;

// Adds the incident subcommands to `app`; the returned value holds their parsed flags.
std::shared_ptr<IncidentCommands> AddIncidentCommands(CLI::App& app);
// Runs whichever incident subcommand was parsed and returns its exit code; nullopt if none was.
std::optional<int> RunIncidentCommand(const IncidentCommands& commands);

}  // namespace tenon::cmd
