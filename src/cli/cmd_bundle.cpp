// `dirigo bundle validate DIR`, `dirigo bundle show DIR [--ssa]` and
// `dirigo bundle merge DIR [--no-trim-prefix] [--trim-suffix]`.
// Exit status: 0 = valid, 4 = invalid bundle (the error names file and field)
// or programs that cannot be merged (the error names both tensors).
#include <iostream>

#include <fmt/format.h>

#include "bundle/io.h"
#include "bundle/print.h"
#include "cli/command.h"
#include "program/merge.h"
#include "program/ssa.h"

namespace dirigo::cli {

DIRIGO_CLI_MEMBERS(program::MergeOptions, trim_prefix, trim_suffix)

namespace {

constexpr int kInvalid = 4;

void show(const bundle::Bundle& b) {
  std::cout << bundle::describe_summary(bundle::summarize(b)) << "\n";
  for (const auto& m : b.modules)
    std::cout << fmt::format("module {}: {}{}{}\n", m.id, m.path, m.arch.empty() ? "" : " " + m.arch,
                             m.ptx ? fmt::format(" ({} bytes of PTX)", m.ptx->size()) : "");
  for (const auto& p : b.programs) {
    std::cout << fmt::format("\nprogram {} ({}{}): {} ops\n", p.name, bundle::role_name(p.role),
                             p.source.empty() ? "" : ", " + p.source, p.ops.size());
    auto tensors = p.tensor_index();
    auto tensor_line = [&](const std::string& id) {
      auto it = tensors.find(id);
      return it == tensors.end() ? id : bundle::describe_tensor(p.tensors[it->second]);
    };
    for (const auto& in : p.inputs)
      std::cout << fmt::format("  {} {}  {}\n", bundle::input_kind_name(in.kind), in.name, tensor_line(in.tensor));
    for (size_t i = 0; i < p.ops.size(); ++i)
      std::cout << fmt::format("  [{}] {}\n", i, bundle::describe_op(p.ops[i]));
    for (const auto& out : p.outputs) std::cout << fmt::format("  output {}  {}\n", out.name, tensor_line(out.tensor));
  }
}

struct BundleArgs {
  std::string dir;
  bool ssa = false;
  program::MergeOptions merge;
};
DIRIGO_CLI_MEMBERS(BundleArgs, dir, ssa, merge)

// `what` is the subcommand chosen: validate, show or merge.
int run_bundle(const BundleArgs& a, const std::string& what) {
  bundle::Bundle b;
  try {
    b = bundle::read_bundle(a.dir);
  } catch (const bundle::BundleError& e) {
    std::cerr << "INVALID " << a.dir << "\n" << e.what() << "\n";
    return kInvalid;
  }
  if (what == "validate") {
    std::cout << "OK " << a.dir << ": " << bundle::describe_summary(bundle::summarize(b)) << "\n";
    return 0;
  }
  if (what == "show" && !a.ssa) show(b);
  if (what == "show" && a.ssa)
    for (const auto& p : b.programs) std::cout << program::describe(program::to_ssa(b, p));
  if (what == "merge") {
    try {
      std::cout << program::describe(program::merge(b, a.merge));
    } catch (const program::MergeError& e) {
      std::cerr << "CANNOT MERGE " << a.dir << ": " << e.what() << "\n";
      return kInvalid;
    }
  }
  return 0;
}

Register register_bundle({"bundle", "validate or list a trace bundle (docs/bundle-format.md)",
                          [](CLI::App& sub) -> std::function<int()> {
                            auto a = std::make_shared<BundleArgs>();
                            add_spec_options(sub, option_spec("bundle"), *a);
                            sub.require_subcommand(1);
                            return [a, &sub] { return run_bundle(*a, sub.get_subcommands().front()->get_name()); };
                          }});

}  // namespace
}  // namespace dirigo::cli
