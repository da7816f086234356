// The strideweave command (docs/cli.md). With no arguments: a short tour on
// the built-in default. Subcommands: tour, plans, resolve, run, caps, check,
// explain, inspect, convert, demo.
//
// CLI11 parses the command line and generates every `--help`. Exit codes:
// 0 success (and --help, --version), 1 an error of the library, 2 a usage
// error, reported on one line of stderr before anything runs.
#include <CLI/CLI.hpp>
#include <fmt/format.h>

#include <iostream>
#include <string>
#include <vector>

#include "cli.h"

namespace {

// "strideweave run" while the run subcommand was being parsed, "strideweave"
// before any subcommand.
std::string command_name(CLI::App& app) {
  std::string name = app.get_name();
  for (const CLI::App* sub : app.get_subcommands()) name = fmt::format("{} {}", name, sub->get_name());
  return name;
}

int usage_error(CLI::App& app, const std::string& what) {
  const std::string command = command_name(app);
  std::cerr << fmt::format("{}: usage error: {} ('{} --help' shows the usage)\n", command, what, command);
  return 2;
}

}  // namespace

int main(int argc, char** argv) {
  using namespace strideweave::cli;
  CLI::App app("strideweave " STRIDEWEAVE_VERSION_TEXT
               " - a C++20 tensor runtime: every operation call resolves to one immutable plan through the "
               "central dtype policy, and each carrier executes exactly the plans it registered.",
               "strideweave");
  app.require_subcommand(0, 1);
  app.set_version_flag("--version", "strideweave " STRIDEWEAVE_VERSION_TEXT);
  const std::vector<Command> commands = {add_tour_command(app), add_plans_command(app), add_resolve_command(app),
                                         add_run_command(app),  add_caps_command(app),  add_check_command(app),
                                         add_explain_command(app), add_inspect_command(app),
                                         add_convert_command(app), add_demo_command(app)};
  // After the subcommands, which would otherwise inherit it.
  app.footer(
      "Without a subcommand: the tour. 'strideweave SUBCOMMAND --help' describes each one; docs/cli.md is the "
      "reference.\nExit codes: 0 success, 1 an error of the library (with --json printed as {\"error\": TYPE, "
      "\"message\": ...}), 2 a usage error.");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    // --help and --version are "errors" with exit code 0: CLI11 prints them.
    if (e.get_exit_code() == static_cast<int>(CLI::ExitCodes::Success)) return app.exit(e);
    return usage_error(app, e.what());
  }
  try {
    for (const Command& command : commands)
      if (command.parser->parsed()) return command.run();
    return run_tour();
  } catch (const UsageError& e) {
    return usage_error(app, e.what());
  } catch (const strideweave::Error& e) {
    return report_error(e, false);
  }
}
