// Kernel summaries (what `dirigo execute FILE.ptx` lists).
#include <gtest/gtest.h>

#include "ptx/inline.h"
#include "ptx/summary.h"
#include "ptx_test_util.h"

namespace dirigo::ptx {
namespace {

TEST(PtxSummary, SharedMemoryParamsRegistersInstructions) {
  Module m = parse(R"(.version 8.0
.target sm_80
.address_size 64
.extern .shared .align 16 .b8 dyn[];
.shared .align 4 .b8 unused_by_k[64];
.shared .align 4 .b8 tile[1024];
.visible .entry k(.param .u64 .ptr .global .align 4 k_param_0, .param .u32 k_param_1)
{
	.local .align 4 .b8 depot[16];
	.reg .b32 %r<5>;
	.reg .f32 %f<3>;
	mov.u32 %r1, tile;
	mov.u32 %r2, dyn;
	ret;
}
)");
  auto ks = summarize(m);
  ASSERT_EQ(ks.size(), 1u);
  const KernelSummary& k = ks[0];
  EXPECT_EQ(k.name, "k");
  ASSERT_EQ(k.params.size(), 2u);
  EXPECT_EQ(k.params[0].type, "u64");
  EXPECT_EQ(k.params[0].ptr_space, "global");
  EXPECT_EQ(k.params[1].size_bytes, 4u);
  EXPECT_EQ(k.static_shared_bytes, 1024u);  // `unused_by_k` is not named by k
  EXPECT_EQ(k.dynamic_shared, std::vector<std::string>{"dyn"});
  EXPECT_EQ(k.local_bytes, 16u);
  EXPECT_EQ(k.register_count, 8u);
  EXPECT_EQ(k.instruction_count, 3u);
  auto j = to_json(m, ks);
  EXPECT_EQ(j["kernels"][0]["registers"]["f32"], 3);
  EXPECT_EQ(j["kernels"][0]["static_shared_bytes"], 1024);
  EXPECT_NE(to_text(ks).find("dynamic 'dyn'"), std::string::npos);
}

}  // namespace
}  // namespace dirigo::ptx
