// `strideweave inspect FILE [--json]`: the header of a .npy or safetensors
// file; `strideweave convert SOURCE DESTINATION [--to FORMAT] [--name NAME]
// [--progress-threshold BYTES] [--json]`: rewrites a file in either format,
// atomically, with a progress bar on stderr (docs/cli.md, docs/storage.md
// "File formats").
#include <CLI/CLI.hpp>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <filesystem>
#include <iostream>
#include <memory>

#include "cli.h"

namespace strideweave::cli {

namespace {

const char* format_name(FileFormat f) { return f == FileFormat::Npy ? "npy" : "safetensors"; }

json header_to_json(const std::string& file, const FileHeader& h) {
  json tensors = json::array();
  for (const StoredTensor& t : h.tensors) {
    tensors.push_back({{"name", h.format == FileFormat::Npy ? json(nullptr) : json(t.name)},
                       {"dtype", t.dtype},
                       {"file_dtype", t.file_dtype},
                       {"shape", t.shape},
                       {"order", t.fortran_order ? "F" : "C"},
                       {"element_count", t.element_count},
                       {"data_offset", t.data_offset},
                       {"data_end", t.data_offset + t.data_bytes},
                       {"data_bytes", t.data_bytes}});
  }
  json metadata = json::object();
  for (const auto& [k, v] : h.metadata) metadata[k] = v;
  return {{"file", file},
          {"format", format_name(h.format)},
          {"version", h.version.empty() ? json(nullptr) : json(h.version)},
          {"header_bytes", h.header_bytes},
          {"file_bytes", h.file_bytes},
          {"metadata", metadata},
          {"tensors", tensors}};
}

void print_header(const std::string& file, const FileHeader& h) {
  std::cout << fmt::format("{}: {}{}, {} tensor{}, header bytes [0, {}), file {} bytes\n", file, format_name(h.format),
                           h.version.empty() ? "" : " " + h.version, h.tensors.size(),
                           h.tensors.size() == 1 ? "" : "s", h.header_bytes, h.file_bytes);
  for (const StoredTensor& t : h.tensors) {
    std::cout << fmt::format("  {:<16} {} ({}) shape [{}] {} order, bytes [{}, {})\n",
                             h.format == FileFormat::Npy ? std::string("(array)") : t.name, t.dtype, t.file_dtype,
                             fmt::join(t.shape, ", "), t.fortran_order ? "F" : "C", t.data_offset,
                             t.data_offset + t.data_bytes);
  }
  for (const auto& [k, v] : h.metadata) std::cout << fmt::format("  metadata {} = {}\n", k, v);
}

struct InspectArguments {
  std::string file;
  bool as_json = false;
};

int run_inspect(const InspectArguments& a) {
  try {
    const FileHeader h = inspect_file(a.file);
    if (a.as_json)
      std::cout << header_to_json(a.file, h).dump() << "\n";
    else
      print_header(a.file, h);
    return 0;
  } catch (const Error& e) {
    return report_error(e, a.as_json);
  }
}

struct ConvertArguments {
  std::string source, destination, to, name;
  std::int64_t progress_threshold = std::int64_t{64} << 20;
  bool as_json = false;
};

int run_convert(const ConvertArguments& a) {
  try {
    const FileHeader source = inspect_file(a.source);
    std::string to = a.to;
    if (to.empty()) {
      const std::string ext = std::filesystem::path(a.destination).extension().string();
      to = ext == ".npy" ? "npy" : "safetensors";
    }
    // Map the source without a copy when FileBacked can hold every tensor
    // (float32, int32), otherwise read it into CPU (bool).
    LoadOptions load;
    load.carrier = LoadTarget::FileBacked;
    for (const StoredTensor& t : source.tensors)
      if (t.dtype == "bool") load.carrier = LoadTarget::CPU;
    std::map<std::string, Tensor> tensors;
    if (source.format == FileFormat::Npy) {
      const std::string name = a.name.empty() ? std::filesystem::path(a.source).stem().string() : a.name;
      tensors.emplace(name, load_npy(a.source, load));
    } else {
      tensors = load_safetensors(a.source, load);
    }
    SaveOptions save;
    save.progress = &draw_progress;
    save.progress_threshold_bytes = a.progress_threshold;
    save.metadata = source.metadata;
    if (to == "npy") {
      const Tensor* chosen = nullptr;
      if (source.format == FileFormat::Npy) {
        chosen = &tensors.begin()->second;
      } else if (!a.name.empty()) {
        const auto it = tensors.find(a.name);
        if (it == tensors.end())
          throw ValueError(fmt::format("'{}' has no tensor named '{}'", a.source, a.name));
        chosen = &it->second;
      } else if (tensors.size() == 1) {
        chosen = &tensors.begin()->second;
      } else {
        throw ValueError(fmt::format("'{}' holds {} tensors and a .npy file holds one: choose it with --name",
                                     a.source, tensors.size()));
      }
      save_npy(a.destination, *chosen, save);
    } else {
      save_safetensors(a.destination, tensors, save);
    }
    const FileHeader written = inspect_file(a.destination);
    if (a.as_json)
      std::cout << header_to_json(a.destination, written).dump() << "\n";
    else
      print_header(a.destination, written);
    return 0;
  } catch (const Error& e) {
    return report_error(e, a.as_json);
  }
}

}  // namespace

Command add_inspect_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "inspect", "Print the header of a .npy or safetensors file: dtype, shape and byte range of each tensor");
  auto a = std::make_shared<InspectArguments>();
  sub->add_option("FILE", a->file, "A .npy or safetensors file")->type_name("")->required();
  sub->add_flag("--json", a->as_json, "Print the header as one JSON object");
  sub->footer("Example: strideweave inspect model.safetensors --json");
  return {sub, [a] { return run_inspect(*a); }};
}

Command add_convert_command(CLI::App& app) {
  CLI::App* sub = app.add_subcommand(
      "convert", "Rewrite a .npy or safetensors file in either format, atomically, with a progress bar");
  auto a = std::make_shared<ConvertArguments>();
  sub->add_option("SOURCE", a->source, "A .npy or safetensors file")->type_name("")->required();
  sub->add_option("DESTINATION", a->destination, "The file to write (replaced atomically)")->type_name("")->required();
  sub->add_option("--to", a->to, "The destination's format (default: npy for a .npy name, else safetensors)")
      ->type_name("FORMAT")
      ->check(not_a_flag())
      ->check(CLI::IsMember({"npy", "safetensors"}));
  sub->add_option("--name", a->name,
                  "The tensor's name: written for a .npy source (default: its file name's stem), chosen from a "
                  "safetensors source for --to npy")
      ->type_name("NAME")
      ->check(not_a_flag());
  sub->add_option("--progress-threshold", a->progress_threshold,
                  "Show the progress bar (stderr) for files larger than this many bytes")
      ->type_name("BYTES")
      ->check(not_a_flag())
      ->check(CLI::NonNegativeNumber)
      ->capture_default_str();
  sub->add_flag("--json", a->as_json, "Print the written file's header as one JSON object");
  sub->footer("Example: strideweave convert weights.npy weights.safetensors --name weight");
  return {sub, [a] { return run_convert(*a); }};
}

}  // namespace strideweave::cli
