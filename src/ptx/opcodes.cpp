// The opcode table built from opcodes.def, plus the small type/space helpers of ast.h.
#include <array>
#include <unordered_map>

#include "ptx/ast.h"

namespace dirigo::ptx {

#define PTX_MEM (MC_TYPE | MC_SPACE | MC_VEC | MC_CACHE | MC_ORDER | MC_SCOPE | MC_MISC)
#define PTX_FARITH (MC_TYPE | MC_RND | MC_FTZ | MC_SAT)
#define PTX_SFU (MC_TYPE | MC_RND | MC_FTZ | MC_APPROX)

namespace {
const std::array<OpcodeInfo, size_t(Opcode::Count_)> kTable = {{
#define PTX_OP(id, name, ndst, minops, maxops, shape, mods) \
  OpcodeInfo{Opcode::id, name, ndst, minops, maxops, shape, uint32_t(mods)},
#include "ptx/opcodes.def"
#undef PTX_OP
}};

const std::unordered_map<std::string_view, Opcode>& name_index() {
  static const auto index = [] {
    std::unordered_map<std::string_view, Opcode> m;
    for (const auto& row : kTable) m.emplace(row.name, row.op);
    return m;
  }();
  return index;
}

struct TypeRow { Type t; std::string_view name; unsigned bits; };
constexpr TypeRow kTypes[] = {
    {Type::None, "", 0},       {Type::Pred, "pred", 1},    {Type::B8, "b8", 8},
    {Type::B16, "b16", 16},    {Type::B32, "b32", 32},     {Type::B64, "b64", 64},
    {Type::B128, "b128", 128}, {Type::U8, "u8", 8},        {Type::U16, "u16", 16},
    {Type::U32, "u32", 32},    {Type::U64, "u64", 64},     {Type::S8, "s8", 8},
    {Type::S16, "s16", 16},    {Type::S32, "s32", 32},     {Type::S64, "s64", 64},
    {Type::F16, "f16", 16},    {Type::F16x2, "f16x2", 32}, {Type::BF16, "bf16", 16},
    {Type::BF16x2, "bf16x2", 32}, {Type::F32, "f32", 32},  {Type::F64, "f64", 64},
    {Type::TF32, "tf32", 32},  {Type::E4M3, "e4m3", 8},    {Type::E5M2, "e5m2", 8},
    {Type::E4M3x2, "e4m3x2", 16}, {Type::E5M2x2, "e5m2x2", 16},
};
}  // namespace

const OpcodeInfo& opcode_info(Opcode op) { return kTable.at(size_t(op)); }
std::string_view opcode_name(Opcode op) { return opcode_info(op).name; }
std::optional<Opcode> opcode_from_name(std::string_view name) {
  auto& m = name_index();
  auto it = m.find(name);
  if (it == m.end()) return std::nullopt;
  return it->second;
}

unsigned type_bits(Type t) { return kTypes[size_t(t)].bits; }
std::string_view type_name(Type t) { return kTypes[size_t(t)].name; }
std::optional<Type> type_from_name(std::string_view s) {
  for (const auto& r : kTypes)
    if (r.t != Type::None && r.name == s) return r.t;
  return std::nullopt;
}
bool is_float(Type t) {
  switch (t) {
    case Type::F16: case Type::F16x2: case Type::BF16: case Type::BF16x2: case Type::F32:
    case Type::F64: case Type::TF32: case Type::E4M3: case Type::E5M2: case Type::E4M3x2:
    case Type::E5M2x2: return true;
    default: return false;
  }
}
bool is_signed_int(Type t) { return t == Type::S8 || t == Type::S16 || t == Type::S32 || t == Type::S64; }
bool is_unsigned_int(Type t) { return t == Type::U8 || t == Type::U16 || t == Type::U32 || t == Type::U64; }
bool is_bits(Type t) {
  return t == Type::B8 || t == Type::B16 || t == Type::B32 || t == Type::B64 || t == Type::B128;
}

std::string_view space_name(StateSpace s) {
  switch (s) {
    case StateSpace::None: return "";
    case StateSpace::Reg: return "reg";
    case StateSpace::Sreg: return "sreg";
    case StateSpace::Const: return "const";
    case StateSpace::Global: return "global";
    case StateSpace::Local: return "local";
    case StateSpace::Param: return "param";
    case StateSpace::Shared: return "shared";
    case StateSpace::SharedCluster: return "shared::cluster";
    case StateSpace::Tex: return "tex";
    case StateSpace::Generic: return "generic";
  }
  return "";
}

}  // namespace dirigo::ptx
