// Manglings below are what g++/nvcc emit for the declarations in the comments.
#include <gtest/gtest.h>

#include "program/kernel_params.h"

using namespace dirigo::program;

namespace {
// "c" = pointer to const, "w" = writable pointer, "v" = by value.
std::string kinds(std::string_view mangled) {
  auto p = kernel_params_from_mangled(mangled);
  if (!p) return "?";
  std::string s;
  for (const auto& k : *p) s += !k.pointer ? 'v' : k.pointee_const ? 'c' : 'w';
  return s;
}
}  // namespace

TEST(KernelParams, PlainPointers) {
  // fused_min(const float*, float*, int, int)
  EXPECT_EQ(kinds("_Z9fused_minPKfPfii"), "cwvv");
}

TEST(KernelParams, SubstitutionOfAConstPointer) {
  // add(const float*, const float*, float*, int): the second is S0_ = PKf
  EXPECT_EQ(kinds("_Z3addPKfS0_Pfi"), "ccwv");
}

TEST(KernelParams, FunctionTemplateHasReturnTypeAndTemplateParams) {
  // template<class T> void tk(const T*, T*, int) with T=float
  EXPECT_EQ(kinds("_Z2tkIfEvPKT_PS0_i"), "cwv");
  // template<int N, class T> void tk2(const T*, T*) with N=256, T=double
  EXPECT_EQ(kinds("_Z3tk2ILi256EdEvPKT0_PS0_"), "cw");
}

TEST(KernelParams, NestedNamesAndStructs) {
  // ns::kernel(const ns::half2*, ns::half2*, const ns::half2*)
  EXPECT_EQ(kinds("_ZN2ns6kernelEPKNS_5half2EPS0_S2_"), "cwc");
  // byval(P, const float* __restrict__, float* __restrict__, const float* __restrict__)
  EXPECT_EQ(kinds("_Z5byval1PPKfPfS1_"), "vcwc");
}

TEST(KernelParams, PyTorchExtensionStyleKernels) {
  // kernel(const c10::Half*, c10::Half*, int)
  EXPECT_EQ(kinds("_Z6kernelPKN3c104HalfEPS0_i"), "cwv");
  // tk<c10::Half>(const T*, T*, const T*, long): template args add c10 and c10::Half candidates
  EXPECT_EQ(kinds("_Z2tkIN3c104HalfEEvPKT_PS2_S4_l"), "cwcv");
  // tk3<c10::BFloat16, 128>(T*, const T*, const float*)
  EXPECT_EQ(kinds("_Z3tk3IN3c108BFloat16ELi128EEvPT_PKS2_PKf"), "wcc");
  // at::native::red<double>(const S* __restrict__, S* __restrict__, unsigned)
  EXPECT_EQ(kinds("_ZN2at6native3redIdEEvPKT_PS2_j"), "cwv");
}

TEST(KernelParams, VolatileIsWritableConstVolatileIsNot) {
  // volp(volatile float*, const volatile int*)
  EXPECT_EQ(kinds("_Z4volpPVfPVKi"), "wc");
}

TEST(KernelParams, PointerToPointer) {
  // pp(const float**, float* const*): the first points to writable pointers
  EXPECT_EQ(kinds("_Z2ppPPKfPKPf"), "wc");
}

TEST(KernelParams, HalfAndVoid) {
  EXPECT_EQ(kinds("_Z1kPKDhPDh"), "cw");  // k(const _Float16-ish half*, half*)
  EXPECT_EQ(kinds("_Z1kv"), "");          // k(void)
}

TEST(KernelParams, UnknownManglingsAreNullopt) {
  EXPECT_EQ(kinds("fused_min"), "?");            // extern "C": no types
  EXPECT_EQ(kinds("_Z3fooPFviE"), "?");          // function pointer parameter
  EXPECT_EQ(kinds("_Z3fooS5_"), "?");            // substitution that does not exist
  EXPECT_EQ(kinds("_Z999foo"), "?");             // name longer than the string
  EXPECT_EQ(kinds("_Z3fooP"), "?");              // truncated
  EXPECT_EQ(kinds(std::string("_Z3foo") + std::string(200, 'P') + "f"), "?");  // absurd nesting is bounded
}
