// `strideweave check --operation NAME` for a user-defined operation: opcheck
// (<strideweave/opcheck.h>, docs/opcheck.md), with the operations and
// carriers that `--plugin PATH` libraries register.
#include <fmt/format.h>

#include <dlfcn.h>

#include <iostream>

#include "cli.h"

namespace strideweave::cli {

namespace {

json case_to_json(const operation::OpcheckCase& c) {
  return json{{"sample", c.sample},
              {"variant", c.variant},
              {"status", operation::name_of(c.status)},
              {"field", c.field.empty() ? json(nullptr) : json(c.field)},
              {"message", c.message}};
}

json report_to_json(const operation::OpcheckReport& r) {
  json carriers = json::array();
  for (const auto& c : r.carriers) {
    json patterns = json::array();
    for (const auto& p : c.patterns) {
      json cases = json::array();
      for (const auto& k : p.cases) cases.push_back(case_to_json(k));
      patterns.push_back({{"kernel_id", p.kernel_id}, {"source", p.source}, {"preference", p.preference}, {"cases", cases}});
    }
    json gradients = json::array();
    for (const auto& k : c.gradients) gradients.push_back(case_to_json(k));
    carriers.push_back({{"carrier", c.carrier},
                        {"problem", c.problem ? case_to_json(*c.problem) : json(nullptr)},
                        {"patterns", patterns},
                        {"gradients", gradients}});
  }
  using operation::OpcheckStatus;
  return json{{"operation", r.operation},
              {"passed", r.count(OpcheckStatus::PASSED)},
              {"failed", r.failed()},
              {"declined", r.count(OpcheckStatus::DECLINED)},
              {"not_applicable", r.count(OpcheckStatus::NOT_APPLICABLE)},
              {"skipped", r.count(OpcheckStatus::SKIPPED)},
              {"carriers", carriers}};
}

}  // namespace

void load_plugins(const std::vector<std::string>& paths) {
  for (const std::string& path : paths) {
    // RTLD_GLOBAL: the plugin's carrier classes and definitions are shared
    // with libstrideweave, which the plugin links (one copy of every registry).
    void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_GLOBAL);
    if (!handle) {
      const char* why = dlerror();
      throw RuntimeError(fmt::format("check: cannot load the plugin '{}': {}", path, why ? why : "unknown reason"));
    }
    // Registration by static initialisers needs no entry point; one named
    // strideweave_plugin_init runs once, after loading.
    if (void* init = dlsym(handle, "strideweave_plugin_init")) reinterpret_cast<void (*)()>(init)();
  }
}

bool is_user_defined(const std::string& name) {
  try {
    return !operation::get_definition(name)->is_builtin();
  } catch (const LookupError&) {
    return false;
  }
}

int run_opcheck(const std::vector<std::string>& names, bool as_json, json* into) {
  bool ok = true;
  json reports = json::array();
  for (const std::string& name : names) {
    const operation::OpcheckReport r = operation::opcheck(*operation::get_definition(name));
    ok = ok && r.passed();
    if (into || as_json) reports.push_back(report_to_json(r));
    else std::cout << operation::to_text(r);
  }
  if (into) *into = std::move(reports);
  else if (as_json) std::cout << json{{"opcheck", reports}}.dump() << "\n";
  return ok ? 0 : 1;
}

}  // namespace strideweave::cli
