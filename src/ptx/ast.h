// The PTX abstract syntax tree: what ptx::parse() produces and what exec consumes.
//
// Shape (see docs/ptx.md):
//   Module      .version/.target/.address_size, module-scope variables (.global/.const/
//               .shared/.extern .shared), functions (.entry kernels and .func), .file table.
//   Function    parameters, register declarations, function-scope variables (.shared,
//               .local, and after inlining the call-site .param scratch), and a FLAT body:
//               a vector of Instructions in program order plus a label -> index map.
//   Instruction opcode (enum from opcodes.def), structured modifiers, optional guard
//               predicate, operands, and its location (PTX line/column, .loc file:line).
//
// Nested `{ ... }` blocks (nvcc's call sequences and inline-asm scopes) are flattened
// by the parser; names declared inside a block are renamed to `name$<blockid>` so a
// block-local `%temp` or `param0` never collides with another block's. Every name an
// instruction mentions refers to exactly one declaration of its function or module.
//
// Constants keep their exact bits: a float immediate (0f3F800000 / 0d..., or a decimal
// literal) stores both the bit pattern and the value, so the math-idiom rollup can key on
// nvcc's hex constants.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace dirigo::ptx {

// ---------------------------------------------------------------- opcodes
enum class Opcode : uint16_t {
#define PTX_OP(id, name, ndst, minops, maxops, shape, mods) id,
#include "ptx/opcodes.def"
#undef PTX_OP
  Count_
};

// One row of the opcode table (opcodes.def).
struct OpcodeInfo {
  Opcode op;
  std::string_view name;   // "add", "cp.async", "shfl"
  int num_dests;           // leading operands that are written (setp's `p|q` counts as one)
  int min_operands, max_operands;
  std::string_view shape;  // documentation of the operand shape, e.g. "d, a, b"
  uint32_t allowed_mods;   // bitmask of ModCat
};
const OpcodeInfo& opcode_info(Opcode op);
std::optional<Opcode> opcode_from_name(std::string_view name);  // exact table name
std::string_view opcode_name(Opcode op);

// ---------------------------------------------------------------- modifiers
enum class Type : uint8_t {
  None, Pred,
  B8, B16, B32, B64, B128,
  U8, U16, U32, U64,
  S8, S16, S32, S64,
  F16, F16x2, BF16, BF16x2, F32, F64, TF32,
  E4M3, E5M2, E4M3x2, E5M2x2,
};
unsigned type_bits(Type t);      // storage width in bits (Pred: 1, None: 0)
bool is_float(Type t);           // f16/bf16/f32/f64/tf32/fp8 (and their x2 packs)
bool is_signed_int(Type t);      // s8..s64
bool is_unsigned_int(Type t);    // u8..u64
bool is_bits(Type t);            // b8..b128
std::string_view type_name(Type t);  // "f32" (no dot)
std::optional<Type> type_from_name(std::string_view s);  // without dot

enum class StateSpace : uint8_t { None, Reg, Sreg, Const, Global, Local, Param, Shared, SharedCluster, Tex, Generic };
std::string_view space_name(StateSpace s);

enum class Rounding : uint8_t { None, Rn, Rz, Rm, Rp, Rna, Rs, Rni, Rzi, Rmi, Rpi };
enum class CmpOp : uint8_t {
  None, Eq, Ne, Lt, Le, Gt, Ge,   // ordered (floats) / signed-or-typed (ints)
  Lo, Ls, Hi, Hs,                 // unsigned ints
  Equ, Neu, Ltu, Leu, Gtu, Geu,   // unordered floats: true when either is NaN
  Num, Nan,
};
enum class BoolOp : uint8_t { None, And, Or, Xor };   // setp.lt.and.s32 d, a, b, c
enum class MulMode : uint8_t { None, Lo, Hi, Wide };
enum class ShflMode : uint8_t { None, Up, Down, Bfly, Idx };
enum class VoteMode : uint8_t { None, All, Any, Uni, Ballot };
enum class AtomOp : uint8_t { None, And, Or, Xor, Cas, Exch, Add, Inc, Dec, Min, Max };
enum class CacheOp : uint8_t { None, Ca, Cg, Cs, Lu, Cv, Wb, Wt, Nc };
enum class MemOrder : uint8_t { None, Weak, Relaxed, Acquire, Release, AcqRel, Sc, Volatile, Mmio };
enum class Scope : uint8_t { None, Cta, Cluster, Gpu, Sys };  // membar.gl is Gpu

// Modifier categories; an opcode row says which it accepts.
enum ModCat : uint32_t {
  MC_TYPE = 1u << 0, MC_RND = 1u << 1, MC_FTZ = 1u << 2, MC_SAT = 1u << 3,
  MC_APPROX = 1u << 4, MC_CMP = 1u << 5, MC_BOOL = 1u << 6, MC_MUL = 1u << 7,
  MC_SPACE = 1u << 8, MC_VEC = 1u << 9, MC_SYNC = 1u << 10, MC_SHFL = 1u << 11,
  MC_ATOM = 1u << 12, MC_VOTE = 1u << 13, MC_CACHE = 1u << 14, MC_ORDER = 1u << 15,
  MC_SCOPE = 1u << 16, MC_UNI = 1u << 17, MC_CC = 1u << 18, MC_MISC = 1u << 19,
  MC_NAN = 1u << 20,   // min/max .NaN, .xorsign, .abs
  MC_TO = 1u << 21,    // cvta.to
  MC_SHIFT = 1u << 22, // shf .l/.r/.clamp/.wrap, bfind .shiftamt
};

struct Modifiers {
  std::vector<Type> types;        // in written order: cvt.rn.f32.s32 -> {F32, S32} (dst, src)
  Rounding rounding = Rounding::None;
  bool ftz = false, sat = false;
  bool approx = false, full = false;
  CmpOp cmp = CmpOp::None;
  BoolOp bool_op = BoolOp::None;
  MulMode mul = MulMode::None;
  StateSpace space = StateSpace::None;       // ld/st/atom/red/cvta/isspacep/...: the memory space
  StateSpace space2 = StateSpace::None;      // second space: cp.async.shared.global -> {Shared, Global}
  int vector_width = 1;                      // .v2 / .v4 / .v8
  bool sync = false, aligned = false;        // shfl.sync, bar.sync, vote.sync, mma.sync.aligned
  bool uni = false;                          // bra.uni / call.uni
  bool cc = false;                           // add.cc / addc.cc carry-out
  bool to = false;                           // cvta.to.global (generic -> space) vs cvta.global
  bool nan = false, xorsign = false, abs = false;   // min/max .NaN .xorsign .abs
  bool shift_left = false, shift_right = false, clamp = false, wrap = false, shiftamt = false;
  ShflMode shfl = ShflMode::None;
  VoteMode vote = VoteMode::None;
  AtomOp atom = AtomOp::None;                // atom/red/redux op
  CacheOp cache = CacheOp::None;
  MemOrder order = MemOrder::None;
  Scope scope = Scope::None;
  std::vector<std::string> misc;             // accepted words with no field: "L1::evict_last",
                                             // "m16n8k16", "row", "arrive", "red", "popc", ...
  std::vector<std::string> words;            // every modifier as written, without dots, in order
};

// ---------------------------------------------------------------- operands
struct Operand {
  enum class Kind : uint8_t {
    Register,   // name: "%r1", "%tid.x", "%SP", a block-local "%temp$3"
    Int,        // int_value (as written; `-1` is -1). `U`-suffixed literals are unsigned
    Float,      // float_bits + float_value; float_width 32 (0f..) or 64 (0d.. or decimal)
    Symbol,     // name: a variable, parameter, function or label (`$L__BB0_2`)
    Address,    // [base+offset]: name is a register or a symbol (base_is_register tells), offset
    Vector,     // {a, b, ...}: elements (registers, `_` sinks, or immediates)
    Pair,       // d|p (setp, shfl): elements[0], elements[1]
    List,       // (a, b, ...) in call: elements
    Sink,       // `_`
  };
  Kind kind = Kind::Register;
  std::string name;
  bool negated = false;          // `!%p` as a predicate source
  bool base_is_register = false; // Address only
  int64_t offset = 0;            // Address only (byte offset)
  int64_t int_value = 0;
  bool int_unsigned = false;
  uint64_t float_bits = 0;
  double float_value = 0.0;
  int float_width = 0;
  std::vector<Operand> elements; // Vector / Pair / List
};

// ---------------------------------------------------------------- instructions
struct SourceLoc {
  int ptx_line = 0, ptx_col = 0;   // 1-based position of the opcode (or guard) in the PTX text
  int file = -1;                   // .loc file index (Module::files), -1 when no .loc preceded
  int line = 0, col = 0;           // source line:column from the last .loc
  int inlined_file = -1, inlined_line = 0;  // its `inlined_at` call site, when the .loc has one
};

struct Guard {
  std::string reg;                 // predicate register
  bool negated = false;            // @!%p
};

struct Instruction {
  Opcode op = Opcode::Count_;
  std::string text;                // the opcode word as written: "ld.global.nc.v4.f32"
  Modifiers mod;
  std::optional<Guard> guard;
  std::vector<Operand> operands;   // in written order; destinations first (st: address first)
  SourceLoc loc;
};

// ---------------------------------------------------------------- declarations
struct RegDecl {
  Type type = Type::None;
  std::string name;                // "%r" for `%r<42>`, or the full name for a single register
  int count = -1;                  // 42 for `%r<42>` (declares %r0..%r41); -1 for a single register
  int vector_width = 1;            // .reg .v2 .f32 (rare)
};

struct Variable {
  StateSpace space = StateSpace::None;
  Type type = Type::None;
  std::string name;
  int align = 0;                   // 0 = natural alignment
  int vector_width = 1;
  std::vector<uint64_t> dims;      // array dimensions; a 0 entry means unsized (`smem[]`)
  bool is_extern = false, is_visible = false, is_weak = false;
  std::vector<Operand> init;       // initializer elements (Int / Float / Symbol), flattened
  bool has_init = false;
  int line = 0;
  uint64_t size_bytes() const;     // element bytes * product(dims); 0 for unsized arrays
};

struct Param {
  Type type = Type::None;
  std::string name;
  int align = 0;
  std::vector<uint64_t> dims;      // `.param .align 16 .b8 p[16]` (by-value structs)
  bool is_ptr = false;             // `.ptr`
  StateSpace ptr_space = StateSpace::None;  // `.ptr .global`
  int ptr_align = 0;               // `.ptr .align 16`
  uint64_t size_bytes() const;
};

struct Function {
  std::string name;
  bool is_entry = false;           // .entry (kernel) vs .func
  bool is_visible = false, is_extern = false, is_weak = false;
  bool has_body = false;           // false for prototypes / .extern declarations
  std::vector<Param> returns;      // .func (.param .b32 func_retval0) f(...)
  std::vector<Param> params;
  std::vector<RegDecl> regs;
  std::vector<Variable> locals;    // function-scope .shared/.local/.param/.const variables
  std::vector<Instruction> body;   // flat, program order
  std::unordered_map<std::string, size_t> labels;  // label -> index of the next instruction
  std::map<std::string, std::vector<int64_t>> directives;  // .maxntid, .reqntid, .minnctapersm, .maxnreg, ...
  int line = 0;

  // The declared type of a register (ranges resolved); nullopt when undeclared.
  std::optional<Type> register_type(std::string_view reg) const;
  // Number of registers declared (a range %r<42> counts 42).
  size_t register_count() const;
};

struct Module {
  std::string version;             // "9.0"
  std::vector<std::string> target; // {"sm_90a"} or {"sm_80", "debug"}
  int address_size = 64;
  std::vector<Variable> globals;   // .global / .const / .shared / .extern .shared at module scope
  std::vector<Function> functions; // in file order; prototypes merged into definitions
  std::map<int, std::string> files;// .file index -> path

  const Function* find_function(std::string_view name) const;
  Function* find_function(std::string_view name);
  const Variable* find_global(std::string_view name) const;
  std::vector<const Function*> kernels() const;  // the .entry functions
};

// ---------------------------------------------------------------- errors
// Malformed or unsupported PTX. what() reads "<line>:<col>: <reason> (at '<token>')".
class ParseError : public std::runtime_error {
 public:
  ParseError(int line, int col, std::string reason, std::string token);
  int line() const { return line_; }
  int col() const { return col_; }
  const std::string& reason() const { return reason_; }
  const std::string& token() const { return token_; }
 private:
  int line_, col_;
  std::string reason_, token_;
};

}  // namespace dirigo::ptx
