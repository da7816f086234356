// The strideweave command: shared helpers of its subcommands.
//
// The command line is parsed by CLI11 (main.cpp): each subcommand registers
// its flags and positionals on the top-level parser and gets the generated
// `--help`. Exit codes (docs/cli.md): 0 success and `--help`; 1 an error of
// the library (printed as {"error", "message"} with --json); 2 a usage error.
#pragma once

#include <strideweave/strideweave.h>

#include <nlohmann/json.hpp>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

namespace CLI {
class App;
class Validator;
}  // namespace CLI

namespace strideweave::cli {

using json = nlohmann::ordered_json;  // keys print in the documented order

// A mistake in how the command was written that CLI11 cannot see by itself:
// an operand or option literal outside the grammar (literals.h), a flag
// combination the subcommand refuses. main prints "strideweave SUB: usage
// error: WHAT" on one line of stderr and exits 2, before anything ran.
class UsageError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// A subcommand: its parser (owned by the top-level CLI::App) and what runs
// when it was given, returning the process exit code.
struct Command {
  CLI::App* parser;
  std::function<int()> run;
};

// A check for every flag's value (`->check(...)`): a value that starts with
// '-' is refused as a usage error. CLI11 would otherwise take the next word
// whatever it is, so `caps --carrier --json` would look for a carrier named
// "--json" instead of reporting that --carrier lacks its value. No value of
// a strideweave flag (a carrier, dtype, arithmetic or operation name, a
// NAME=JSON option, a file name) starts with '-'.
const CLI::Validator& not_a_flag();

// A progress bar on stderr, redrawn in place (`done` of `total` bytes); it
// ends its line at 100%.
void draw_progress(std::int64_t done, std::int64_t total);

// The subcommands, in the order `strideweave --help` lists them.
Command add_tour_command(CLI::App& app);     // cmd_tour.cpp
Command add_plans_command(CLI::App& app);    // cmd_plans.cpp
Command add_resolve_command(CLI::App& app);  // cmd_plans.cpp
Command add_run_command(CLI::App& app);      // cmd_run.cpp
Command add_caps_command(CLI::App& app);     // cmd_caps.cpp
Command add_check_command(CLI::App& app);    // cmd_check.cpp (and --gradients)
Command add_explain_command(CLI::App& app);  // cmd_explain.cpp
Command add_inspect_command(CLI::App& app);  // cmd_formats.cpp
Command add_convert_command(CLI::App& app);  // cmd_formats.cpp
Command add_demo_command(CLI::App& app);     // cmd_demo.cpp (demo out-of-core)

// The tour (also what `strideweave` alone runs).
int run_tour();

// A plan as the documented JSON object (dtype names in lower case, enum
// members by their names).
json plan_to_json(const OperationPlan& plan);

// The shipped carriers (<strideweave/carriers/shipped.h>) named NAME
// (case-insensitive), or all of them when NAME is empty; ValueError naming
// the known carriers otherwise.
std::vector<const ShippedCarrier*> select_carriers(const std::string& wanted);
// The shipped carrier named NAME (case-insensitive), or nullptr.
const ShippedCarrier* find_carrier(std::string_view name);
// The shipped carriers' names in lower case, in list order (what --carrier
// accepts).
std::vector<std::string> carrier_choices();
// A zero-sized prototype of the carrier's class: tensors built with its
// new_like live on exactly that class.
std::shared_ptr<Carrier> prototype_of(const ShippedCarrier& carrier);

// `strideweave check --gradients [--carrier NAME] [--operation NAME]...
// [--json]` (cmd_check_gradients.cpp); `operations` empty = all.
int run_check_gradients(const std::string& carrier, const std::vector<std::string>& operations, bool as_json);

// `check --plugin PATH` (cmd_opcheck.cpp): loads each shared library (its
// static initialisers, then its `extern "C" void strideweave_plugin_init()`
// if it has one, register operations, carriers and opcheck inputs);
// RuntimeError naming the path when it cannot be loaded.
void load_plugins(const std::vector<std::string>& paths);
// A registered operation that is not one of the library's own.
bool is_user_defined(const std::string& name);
// opcheck of each named user-defined operation: its text report printed, or
// with `as_json` {"opcheck": [REPORT...]}; with `into`, the JSON list is
// stored there instead of printed. Returns 1 when any check failed.
int run_opcheck(const std::vector<std::string>& names, bool as_json, json* into = nullptr);

// The operation names given to a filter (`check --operation`), each checked
// against the registry: an unregistered name -> NotImplementedError, as
// everywhere else in the library.
void require_registered_operations(const std::vector<std::string>& names);

// The `--option NAME=JSON` flag of `run` and `explain` (repeatable; a value
// without '=' or with an empty NAME is a usage error).
void add_operation_option_flag(CLI::App& sub, std::vector<std::string>& specs, const std::string& help);

// Prints {"error": type, "message": ...} to stdout when `as_json`, otherwise
// "strideweave: TYPE: MESSAGE" to stderr; returns 1.
int report_error(const Error& error, bool as_json);

}  // namespace strideweave::cli
