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

Register register_bundle({"bundle", "validate or list a trace bundle (docs/bundle-format.md)", [](CLI::App& sub) {
                auto dir = std::make_shared<std::string>();
                auto* validate = sub.add_subcommand("validate", "check a bundle; prints OK and a summary, or the error");
                validate->add_option("DIR", *dir, "bundle directory or .tar")->required();
                auto* listing = sub.add_subcommand("show", "list each program's inputs, ops and outputs");
                listing->add_option("DIR", *dir, "bundle directory or .tar")->required();
                auto ssa = std::make_shared<bool>(false);
                listing->add_flag("--ssa", *ssa, "list the SSA form: storage versions read and written by each op");
                auto* merging = sub.add_subcommand("merge", "merge reference and candidate (matching, trimming)");
                merging->add_option("DIR", *dir, "bundle directory or .tar")->required();
                auto opts = std::make_shared<program::MergeOptions>();
                merging->add_flag("!--no-trim-prefix", opts->trim_prefix, "keep the common prefix of pure ATen ops");
                merging->add_flag("--trim-suffix", opts->trim_suffix, "also trim a common suffix (sound for injective ops)");
                sub.require_subcommand(1);
                return [dir, validate, listing, ssa, merging, opts]() -> int {
                  bundle::Bundle b;
                  try {
                    b = bundle::read_bundle(*dir);
                  } catch (const bundle::BundleError& e) {
                    std::cerr << "INVALID " << *dir << "\n" << e.what() << "\n";
                    return kInvalid;
                  }
                  if (validate->parsed()) {
                    std::cout << "OK " << *dir << ": " << bundle::describe_summary(bundle::summarize(b)) << "\n";
                    return 0;
                  }
                  if (listing->parsed() && !*ssa) show(b);
                  if (listing->parsed() && *ssa)
                    for (const auto& p : b.programs) std::cout << program::describe(program::to_ssa(b, p));
                  if (merging->parsed()) {
                    try {
                      std::cout << program::describe(program::merge(b, *opts));
                    } catch (const program::MergeError& e) {
                      std::cerr << "CANNOT MERGE " << *dir << ": " << e.what() << "\n";
                      return kInvalid;
                    }
                  }
                  return 0;
                };
              }});

}  // namespace
}  // namespace dirigo::cli
