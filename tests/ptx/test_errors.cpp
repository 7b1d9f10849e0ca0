// Malformed or unsupported PTX: a ParseError naming line, column and the offending token.
#include <gtest/gtest.h>

#include "ptx_test_util.h"

namespace dirigo::ptx {
namespace {

using test::kernel_text;

// Parses `text` and returns the ParseError it must raise.
ParseError error_of(const std::string& text) {
  try {
    parse(text);
  } catch (const ParseError& e) {
    return e;
  }
  ADD_FAILURE() << "no ParseError for:\n" << text;
  return ParseError(0, 0, "", "");
}

constexpr int kBodyLine = 12;  // first body line of kernel_text()

TEST(PtxErrors, UnknownOpcodeNamesLineColumnAndToken) {
  ParseError e = error_of(kernel_text("add.s32 %r1, %r2, 1;\n  frobnicate.b32 %r1, %r2;"));
  EXPECT_EQ(e.line(), kBodyLine + 1);
  EXPECT_EQ(e.col(), 3);
  EXPECT_EQ(e.token(), "frobnicate.b32");
  EXPECT_NE(e.reason().find("unknown opcode 'frobnicate'"), std::string::npos);
  EXPECT_NE(std::string(e.what()).find("13:3:"), std::string::npos);
}

TEST(PtxErrors, ModifierNotAllowedOnOpcode) {
  ParseError e = error_of(kernel_text("add.wide.bogus.s32 %r1, %r2, 1;"));
  EXPECT_NE(e.reason().find("modifier '.wide' is not valid on 'add'"), std::string::npos);
  ParseError e2 = error_of(kernel_text("shfl.sync.sideways.b32 %r1, %r2, 1, 31, -1;"));
  EXPECT_NE(e2.reason().find("'.sideways'"), std::string::npos);
}

TEST(PtxErrors, WrongOperandCount) {
  ParseError e = error_of(kernel_text("add.s32 %r1, %r2;"));
  EXPECT_NE(e.reason().find("'add' takes 3 operands, got 2"), std::string::npos);
  EXPECT_EQ(e.line(), kBodyLine);
}

TEST(PtxErrors, MissingSemicolonOrComma) {
  ParseError e = error_of(kernel_text("add.s32 %r1, %r2, 1\nret;"));
  EXPECT_EQ(e.token(), "ret");
  EXPECT_EQ(e.line(), kBodyLine + 1);
}

TEST(PtxErrors, UndeclaredRegister) {
  ParseError e = error_of(kernel_text("add.s32 %r1, %q7, 1;"));
  EXPECT_EQ(e.token(), "%q7");
  EXPECT_NE(e.reason().find("undeclared register"), std::string::npos);
  ParseError e2 = error_of(kernel_text("mov.u32 %r20, 1;"));  // %r<20> ends at %r19
  EXPECT_EQ(e2.token(), "%r20");
}

TEST(PtxErrors, BranchToUnknownLabel) {
  ParseError e = error_of(kernel_text("bra.uni $L__nowhere;"));
  EXPECT_EQ(e.token(), "$L__nowhere");
}

TEST(PtxErrors, DuplicateLabel) {
  ParseError e = error_of(kernel_text("$L1:\nret;\n$L1:\nret;"));
  EXPECT_EQ(e.token(), "$L1");
}

TEST(PtxErrors, MalformedLiterals) {
  EXPECT_NE(error_of(kernel_text("mov.f32 %f1, 0f3F80;")).reason().find("8 hex digits"), std::string::npos);
  EXPECT_NE(error_of(kernel_text("mov.u32 %r1, 0x;")).reason().find("malformed integer"), std::string::npos);
  EXPECT_NE(error_of(kernel_text("mov.u32 %r1, 99999999999999999999999;")).reason().find("out of range"),
            std::string::npos);
  EXPECT_NE(error_of(kernel_text("mov.u32 %r1, 09;")).reason().find("malformed integer"), std::string::npos);
}

TEST(PtxErrors, UnterminatedConstructs) {
  EXPECT_NE(error_of(".version 8.0\n.visible .entry k()\n{\n ret;\n").reason().find("unterminated function body"),
            std::string::npos);
  EXPECT_NE(error_of("/* open").reason().find("unterminated /*"), std::string::npos);
  EXPECT_NE(error_of(".file 1 \"abc").reason().find("unterminated string"), std::string::npos);
}

TEST(PtxErrors, BadCharactersAndDirectives) {
  ParseError e = error_of(".version 8.0\n#include <x>\n");
  EXPECT_EQ(e.line(), 2);
  EXPECT_EQ(e.token(), "#");
  EXPECT_NE(error_of(".version 8.0\n.frobnicate 3;\n").reason().find("unknown module-scope directive"),
            std::string::npos);
  EXPECT_NE(error_of(kernel_text(".frob .b32 x;")).reason().find("unknown directive in function body"),
            std::string::npos);
  EXPECT_NE(error_of(kernel_text("@ bra $L1;")).reason().find("guard predicate"), std::string::npos);
}

TEST(PtxErrors, BadNegationAndOperands) {
  EXPECT_NE(error_of(kernel_text("mov.u32 %r1, !5;")).reason().find("predicate register"), std::string::npos);
  EXPECT_NE(error_of(kernel_text("mov.u32 %r1, -%r2;")).reason().find("number after '-'"), std::string::npos);
  EXPECT_NE(error_of(kernel_text("ld.global.f32 %f1, [%rd1+];")).reason().find("offset"), std::string::npos);
}

TEST(PtxErrors, DuplicateFunctionDefinition) {
  std::string f = ".func f()\n{\n ret;\n}\n";
  ParseError e = error_of(".version 8.0\n" + f + f);
  EXPECT_NE(e.reason().find("defined twice"), std::string::npos);
}

// Truncating a valid module at every byte gives a ParseError or a parse, never a crash.
TEST(PtxErrors, EveryTruncationIsHandled) {
  std::string text = kernel_text(
      "ld.global.nc.v4.f32 {%f1, %f2, %f3, %f4}, [%rd1+16];\n"
      "@!%p1 bra $L__BB0_2;\n"
      "fma.rn.f32 %f5, %f1, 0f3F800000, -1.5;\n"
      "$L__BB0_2:\n"
      "shfl.sync.down.b32 %r1|%p2, %r2, 16, 31, -1;\n"
      "ret;");
  int parsed = 0, errors = 0;
  for (size_t n = 0; n <= text.size(); ++n) {
    try {
      parse(text.substr(0, n));
      ++parsed;
    } catch (const ParseError&) {
      ++errors;
    }
  }
  EXPECT_GT(errors, 0);
  EXPECT_GT(parsed, 0);  // e.g. the header alone is a valid module
}

}  // namespace
}  // namespace dirigo::ptx

namespace dirigo::ptx {
namespace {

// Hostile nesting is an error, not a stack overflow.
TEST(PtxErrors, DeepNestingIsBounded) {
  std::string deep_init = ".version 8.0\n.global .u32 g[1] = " + std::string(100000, '{') + "1" +
                          std::string(100000, '}') + ";\n";
  EXPECT_THROW(parse(deep_init), ParseError);
  std::string deep_vec = test::kernel_text("mov.b32 " + std::string(100000, '{') + "%r1" + std::string(100000, '}') + ", %r2;");
  EXPECT_THROW(parse(deep_vec), ParseError);
  std::string deep_not = test::kernel_text("and.pred %p1, %p2, " + std::string(100000, '!') + "%p3;");
  EXPECT_THROW(parse(deep_not), ParseError);
  std::string deep_blocks = test::kernel_text(std::string(100000, '{') + std::string(100000, '}'));
  EXPECT_THROW(parse(deep_blocks), ParseError);
  // Ordinary nesting still parses.
  EXPECT_NO_THROW(parse(test::kernel_text("{ { { mov.b32 %r1, %r2; } } }")));
}

}  // namespace
}  // namespace dirigo::ptx
