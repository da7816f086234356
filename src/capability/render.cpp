// Rendering capability descriptors as the markdown tables of
// docs/capabilities.md, so documentation is generated, never hand-kept.
#include <strideweave/capability.h>

#include <fmt/format.h>

#include "capability/registry.h"

namespace strideweave {
namespace {

std::string operands_text(const OperationCapability& c) {
  std::string out;
  for (const OperandCapability& o : c.operands()) {
    if (!out.empty()) out += ", ";
    if (o.role() == OperandRole::TENSOR) {
      out += o.dtype()->name();
      if (o.dtype() != &o.convert_to()) out += "->" + o.convert_to().name();
    } else {
      out += "scalar->" + o.convert_to().name();
    }
  }
  return out;
}

}  // namespace

std::string render_capability_table(CarrierClass cls) {
  std::string out =
      "| operation | operands | compute | accumulation | accumulator | output | owned_result | borrowed_input | "
      "caller_output | strided_output | accumulation (rmw) |\n"
      "|---|---|---|---|---|---|---|---|---|---|---|\n";
  for (const OperationCapability& c : capabilities_for_carrier_class(cls)) {
    const ExecutionAxes a = execution_axes(cls, c);
    out += fmt::format("| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {} |\n", c.operation(), operands_text(c),
                       name_of(c.compute()), c.accumulation() ? name_of(*c.accumulation()) : "-",
                       c.accumulator_dtype() ? c.accumulator_dtype()->name() : "-", c.output().name(),
                       name_of(a.owned_result), name_of(a.borrowed_input), name_of(a.caller_output),
                       name_of(a.strided_output), name_of(a.accumulation));
  }
  return out;
}

std::string render_capability_tables_into(const std::string& document) {
  std::string out = document;
  std::vector<CarrierClass> classes = capability_registry::kernel_backed_classes();
  for (const CarrierClass& cls : capability_registry::definition_backed_classes()) classes.push_back(cls);
  for (const CarrierClass& cls : classes) {
    const std::string& name = cls.name();
    const std::string begin = fmt::format("<!-- BEGIN CAPABILITIES: {} -->\n", name);
    const std::string end = fmt::format("<!-- END CAPABILITIES: {} -->", name);
    const auto b = out.find(begin);
    if (b == std::string::npos) continue;
    const auto e = out.find(end, b);
    if (e == std::string::npos) continue;
    out.replace(b + begin.size(), e - (b + begin.size()), render_capability_table(cls));
  }
  return out;
}

}  // namespace strideweave
