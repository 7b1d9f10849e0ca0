// Math-idiom rollup (paper §4.1): recognizes nvcc's instruction sequences for expf, tanhf,
// logf, ... and their fast-math forms, keyed on nvcc's hex constants, and replaces each whole
// sequence by one pseudo-instruction `d = fn(x)`.
//
// The pseudo-instruction is an annotation over a function's flat body rather than a new
// opcode: `Rollup::at[i]` says what instruction i became —
//   Keep      execute it as written,
//   Math      it is the idiom's last instruction: write fn(args) to `dest` (a register),
//   Absorbed  it belongs to a matched idiom and is skipped (its results are used only
//             inside the idiom; the matcher checks this).
// Body indices and labels stay valid, so the executor needs no re-numbering.
// Bit manipulation on floats that no template matches stays Keep; the executor then reports
// UNSUPPORTED at that line (never a wrong expression).
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "ir/expr.h"
#include "ptx/ast.h"

namespace dirigo::ptx {

struct RolledInstr {
  enum class Kind : uint8_t { Keep, Math, Absorbed } kind = Kind::Keep;
  ir::Fn fn = ir::Fn::Exp;           // Math: the function
  std::string dest;                  // Math: destination register
  std::vector<Operand> args;         // Math: arguments (registers or immediates)
  bool negate = false;               // Math: the idiom computes fn(-x) (nvcc folded the sign into a constant)
  std::optional<Operand> addend;     // Math: nvcc fused the idiom's last multiply into an fma: d = fn(args) + addend
  std::string idiom;                 // Math: template name ("expf", "__expf", "tanhf", ...)
};

struct Rollup {
  std::vector<RolledInstr> at;       // one per body instruction
  std::vector<std::string> matched;  // idiom names in program order (for tests / reports)
};

// Matches every known idiom in f's body. Pure: f is not modified.
Rollup rollup(const Function& f);

// Integer work on the bits of a float (mov.b32 %r, %f followed by and/shl/add.s32/setp.s32/...,
// or such bits moved back into a float register) that no idiom absorbed. Execute refuses these
// (UNSUPPORTED, never a wrong expression); this finds them statically, one entry per offending
// instruction: "UNSUPPORTED: kernel K, PTX line N ('and.b32'): integer operation on float bits
// of %f3 (no math idiom matched)".
struct FloatBitsUse {
  int index = 0;     // body index
  int ptx_line = 0;
  std::string message;
};
std::vector<FloatBitsUse> unmatched_float_bits(const Function& f, const Rollup& r);

}  // namespace dirigo::ptx
