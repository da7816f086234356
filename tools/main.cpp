// The strideweave command. With no arguments: a short tour on the built-in
// default. Subcommands: plans, resolve, run, caps, check (docs/cli.md).
#include <iostream>
#include <string>
#include <vector>

#include "cli.h"

int main(int argc, char** argv) {
  using namespace strideweave::cli;
  std::vector<std::string> args(argv + 1, argv + argc);
  if (args.empty()) return run_tour();
  const std::string command = args.front();
  args.erase(args.begin());
  try {
    if (command == "plans") return run_plans(args);
    if (command == "resolve") return run_resolve(args);
    if (command == "caps") return run_caps(args);
    if (command == "check") return run_check(args);
    if (command == "run") return run_run(args);
    if (command == "tour") return run_tour();
  } catch (const strideweave::Error& e) {
    return report_error(e, false);
  }
  std::cerr << "usage: strideweave [tour | plans [--json] | resolve OPERATION ARG... [--accumulator DTYPE] --json\n"
               "                   | run OPERATION ARG... [--carrier generic|cpu] [--option NAME=JSON]...\n"
               "                         [--accumulator DTYPE] --json | run --list [--json]\n"
               "                   | caps [--carrier NAME] [--json] | caps --render-docs FILE\n"
               "                   | check [--carrier NAME] [--json] | check --gradients [--json]]\n";
  return 2;
}
