#include "ptx/matrix.h"

#include <algorithm>
#include <functional>
#include <string>

#include <fmt/format.h>

#include "ptx/parser.h"

namespace dirigo::ptx {

namespace {

bool has_word(const Instruction& in, std::string_view w) {
  return std::find(in.mod.words.begin(), in.mod.words.end(), w) != in.mod.words.end();
}

// the number of matrices (x1/x2/x4) of a covered stmatrix/ldmatrix, 0 when not covered
int covered_count(const Function& f, const Instruction& in) {
  if (in.op != Opcode::Stmatrix && in.op != Opcode::Ldmatrix) return 0;
  if (!has_word(in, "m8n8") || has_word(in, "trans") || !has_word(in, "b16")) return 0;
  int n = has_word(in, "x1") ? 1 : has_word(in, "x2") ? 2 : has_word(in, "x4") ? 4 : 0;
  if (!n || in.guard || in.operands.size() != 2) return 0;
  const Operand& addr = in.operands[in.op == Opcode::Stmatrix ? 0 : 1];
  const Operand& regs = in.operands[in.op == Opcode::Stmatrix ? 1 : 0];
  if (addr.kind != Operand::Kind::Address || !addr.base_is_register) return 0;
  auto t = f.register_type(addr.name);
  if (!t || type_bits(*t) != 32) return 0;
  size_t nregs = regs.kind == Operand::Kind::Vector ? regs.elements.size() : 1;
  if (int(nregs) != n) return 0;
  if (regs.kind == Operand::Kind::Vector)
    for (const auto& e : regs.elements)
      if (e.kind != Operand::Kind::Register) return 0;
  return n;
}

void rename(Operand& o, const std::function<std::string(const std::string&)>& map) {
  if (o.kind == Operand::Kind::Register || (o.kind == Operand::Kind::Address && o.base_is_register))
    o.name = map(o.name);
  for (auto& e : o.elements) rename(e, map);
}

}  // namespace

int lower_matrix_moves(Function& f) {
  int rewritten = 0, next_reg = 0;
  std::vector<Instruction> body;
  std::vector<size_t> new_index(f.body.size() + 1, 0);
  for (size_t i = 0; i < f.body.size(); ++i) {
    new_index[i] = body.size();
    const Instruction& in = f.body[i];
    int n = covered_count(f, in);
    if (!n) {
      body.push_back(in);
      continue;
    }
    bool store = in.op == Opcode::Stmatrix;
    const Operand& addr = in.operands[store ? 0 : 1];
    const Operand& regs = in.operands[store ? 1 : 0];
    std::vector<std::string> values;
    if (regs.kind == Operand::Kind::Vector)
      for (const auto& e : regs.elements) values.push_back(e.name);
    else
      values.push_back(regs.name);
    // the replacement, written as PTX over placeholders %A (address) and %V<j> (values)
    std::string code = "mov.u32 %T0, %laneid;\nshr.u32 %T1, %T0, 2;\nand.b32 %T2, %T0, 3;\nshl.b32 %T3, %T2, 2;\n";
    for (int j = 0; j < n; ++j) {
      code += fmt::format("add.u32 %T{0}, %T1, {1};\nshfl.sync.idx.b32 %T{2}, %A, %T{0}, 31, -1;\n"
                          "add.u32 %T{3}, %T{2}, %T3;\n", 4 + 3 * j, 8 * j, 5 + 3 * j, 6 + 3 * j);
      code += store ? fmt::format("st.shared.b32 [%T{} + {}], %V{};\n", 6 + 3 * j, addr.offset, j)
                    : fmt::format("ld.shared.b32 %V{}, [%T{} + {}];\n", j, 6 + 3 * j, addr.offset);
    }
    int ntemp = 4 + 3 * n;
    std::string text = fmt::format(".version 8.0\n.target sm_90\n.address_size 64\n.visible .entry k()\n{{\n"
                                   ".reg .b32 %T<{}>;\n.reg .b32 %A;\n.reg .b32 %V<4>;\n{}ret;\n}}\n",
                                   ntemp, code);
    Module snippet = parse(text);
    const Function& g = snippet.functions.at(0);
    int base = next_reg;
    next_reg += ntemp;
    auto map = [&](const std::string& r) -> std::string {
      if (r == "%A") return addr.name;
      if (r.rfind("%V", 0) == 0) return values.at(size_t(std::stoi(r.substr(2))));
      if (r.rfind("%T", 0) == 0) return fmt::format("%mx${}", base + std::stoi(r.substr(2)));
      return r;  // %laneid
    };
    for (size_t k = 0; k + 1 < g.body.size(); ++k) {  // without the trailing ret
      Instruction x = g.body[k];
      for (auto& o : x.operands) rename(o, map);
      x.loc = in.loc;
      body.push_back(std::move(x));
    }
    ++rewritten;
  }
  new_index[f.body.size()] = body.size();
  if (!rewritten) return 0;
  for (auto& [label, idx] : f.labels) idx = new_index.at(idx);
  f.body = std::move(body);
  f.regs.push_back(RegDecl{Type::B32, "%mx$", next_reg, 1});
  return rewritten;
}

}  // namespace dirigo::ptx
