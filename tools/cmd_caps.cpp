// `strideweave caps [--carrier NAME] [--json]` and
// `strideweave caps --render-docs FILE`: the capability descriptors.
#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <fstream>
#include <iostream>
#include <sstream>

#include "cli.h"

namespace strideweave::cli {

std::vector<std::pair<CarrierClass, std::string>> select_carriers(const std::string& wanted) {
  std::vector<std::pair<CarrierClass, std::string>> out;
  auto lower = [](std::string s) {
    std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return static_cast<char>(std::tolower(c)); });
    return s;
  };
  for (const ShippedCarrier& c : shipped_carriers())
    if (wanted.empty() || lower(std::string(c.name)) == lower(wanted)) out.emplace_back(c.cls, std::string(c.name));
  if (out.empty()) throw ValueError(fmt::format("no carrier named '{}' (known: generic, cpu)", wanted));
  return out;
}

json capability_to_json(const OperationCapability& c) {
  json j = plan_to_json(c.to_plan());
  const ExecutionAxes& a = c.axes();
  j["axes"] = {{"owned_result", name_of(a.owned_result)},
               {"borrowed_input", name_of(a.borrowed_input)},
               {"caller_output", name_of(a.caller_output)},
               {"strided_output", name_of(a.strided_output)},
               {"accumulation", name_of(a.accumulation)}};
  return j;
}

int run_caps(const std::vector<std::string>& args) {
  bool as_json = false;
  std::string carrier, render_file;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--json") as_json = true;
    else if (args[i] == "--carrier" && i + 1 < args.size()) carrier = args[++i];
    else if (args[i] == "--render-docs" && i + 1 < args.size()) render_file = args[++i];
    else {
      std::cerr << "usage: strideweave caps [--carrier NAME] [--json] | caps --render-docs FILE\n";
      return 2;
    }
  }
  try {
    if (!render_file.empty()) {
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
      for (const auto& [cls, name] : carriers) {
        json caps = json::array();
        for (const OperationCapability& c : capabilities_for_carrier_class(cls)) caps.push_back(capability_to_json(c));
        list.push_back({{"name", name}, {"capabilities", caps}});
      }
      std::cout << json{{"carriers", list}}.dump() << "\n";
    } else {
      for (const auto& [cls, name] : carriers)
        std::cout << "## " << name << "\n\n" << render_capability_table(cls) << "\n";
    }
    return 0;
  } catch (const Error& e) {
    return report_error(e, as_json);
  }
}

}  // namespace strideweave::cli
