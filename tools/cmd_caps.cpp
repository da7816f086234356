// `strideweave caps [--carrier NAME] [--json]` and
// `strideweave caps --render-docs FILE`: the capability descriptors.
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli.h"

namespace strideweave::cli {

namespace {
std::string lower(std::string_view s) {
  std::string out(s);
  std::transform(out.begin(), out.end(), out.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
  return out;
}
}  // namespace

std::vector<std::string> carrier_choices() {
  std::vector<std::string> out;
  for (const ShippedCarrier& c : shipped_carriers()) out.push_back(lower(c.name));
  return out;
}

const ShippedCarrier* find_carrier(std::string_view name) {
  for (const ShippedCarrier& c : shipped_carriers())
    if (lower(c.name) == lower(name)) return &c;
  return nullptr;
}

std::vector<const ShippedCarrier*> select_carriers(const std::string& wanted) {
  std::vector<const ShippedCarrier*> out;
  if (wanted.empty()) {
    for (const ShippedCarrier& c : shipped_carriers()) out.push_back(&c);
  } else if (const ShippedCarrier* c = find_carrier(wanted)) {
    out.push_back(c);
  } else {
    throw ValueError(fmt::format("no carrier named '{}' (known: {})", wanted, fmt::join(carrier_choices(), ", ")));
  }
  return out;
}

std::shared_ptr<Carrier> prototype_of(const ShippedCarrier& carrier) { return carrier.make({}, DType::Float32()); }

json capability_to_json(CarrierClass cls, const OperationCapability& c) {
  json j = plan_to_json(c.to_plan());
  const ExecutionAxes a = execution_axes(cls, c);
  j["axes"] = {{"owned_result", name_of(a.owned_result)},
               {"borrowed_input", name_of(a.borrowed_input)},
               {"caller_output", name_of(a.caller_output)},
               {"strided_output", name_of(a.strided_output)},
               {"accumulation", name_of(a.accumulation)}};
  return j;
}

namespace {

struct CapsArguments {
  std::string carrier, render_file;
  bool as_json = false;
  CLI::Option* render_given = nullptr;
};

int run_caps(const CapsArguments& a) {
  const bool as_json = a.as_json;
  const std::string& carrier = a.carrier;
  const std::string& render_file = a.render_file;
  try {
    if (a.render_given->count() > 0) {
      std::ifstream in(render_file);
      if (!in) throw ValueError(fmt::format("cannot read '{}'", render_file));
      std::stringstream buffer;
      buffer << in.rdbuf();
      const std::string rendered = render_capability_tables_into(buffer.str());
      std::ofstream(render_file) << rendered;
      return 0;
    }
    const auto carriers = select_carriers(carrier);
    if (as_json) {
      json list = json::array();
      for (const ShippedCarrier* shipped : carriers) {
        json caps = json::array();
        for (const OperationCapability& c : capabilities_for_carrier_class(shipped->cls))
          caps.push_back(capability_to_json(shipped->cls, c));
        list.push_back({{"name", shipped->name}, {"capabilities", caps}});
      }
      std::cout << json{{"carriers", list}}.dump() << "\n";
    } else {
      for (const ShippedCarrier* shipped : carriers)
        std::cout << "## " << shipped->name << "\n\n" << render_capability_table(shipped->cls) << "\n";
    }
    return 0;
  } catch (const Error& e) {
    return report_error(e, as_json);
  }
}

}  // namespace

Command add_caps_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand("caps", "The capability descriptors of the shipped carriers");
  auto a = std::make_shared<CapsArguments>();
  CLI::Option* carrier = sub->add_option("--carrier", a->carrier, "Only the carrier of this name (case-insensitive)")
                             ->type_name("NAME")
                             ->check(not_a_flag());
  CLI::Option* as_json = sub->add_flag(
      "--json", a->as_json,
      "Print {\"carriers\": [{\"name\", \"capabilities\": [PLAN + \"axes\"]}]} instead of markdown tables");
  a->render_given =
      sub->add_option("--render-docs", a->render_file,
                      "Rewrite the marked capability tables of FILE from the descriptors (docs/capabilities.md)")
          ->type_name("FILE")
          ->check(not_a_flag())
          ->excludes(carrier)
          ->excludes(as_json);
  return {sub, [a] { return run_caps(*a); }};
}

}  // namespace strideweave::cli
