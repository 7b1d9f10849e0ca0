#include <gtest/gtest.h>

#include <cmath>

#include "bundle/io.h"
#include "bundle/sha256.h"
#include "fixture.h"

using namespace dirigo::bundle;
using namespace dirigo::bundle::testing;

TEST(Read, ValidFixtureLoads) {
  TempDir dir;
  write_bundle_dir(dir.path(), valid_manifest());
  Bundle b = read_bundle(dir.path());
  ASSERT_EQ(b.programs.size(), 2u);
  const Program& cand = b.programs[1];
  EXPECT_EQ(cand.name, "new");
  EXPECT_EQ(cand.role, Role::Candidate);
  ASSERT_EQ(cand.ops.size(), 5u);
  EXPECT_EQ(op_kind_name(cand.ops[1]), "launch");
  const auto& launch = std::get<LaunchOp>(cand.ops[1]);
  EXPECT_EQ(launch.grid, (std::array<int64_t, 3>{4, 1, 1}));
  EXPECT_EQ(std::get<Scalar>(launch.args[2].value).i, 4);
  EXPECT_EQ(std::get<TensorRef>(launch.args[1].value).byte_offset, 0);
  const auto& add = std::get<AtenOp>(cand.ops[4]);
  ASSERT_EQ(add.kwargs.size(), 1u);
  EXPECT_EQ(add.kwargs[0].first, "alpha");
  EXPECT_DOUBLE_EQ(std::get<Scalar>(add.kwargs[0].second.value).f, 1.5);
  const auto& lib = std::get<LibraryOp>(cand.ops[3]);
  ASSERT_EQ(lib.args.size(), 4u);
  EXPECT_EQ(lib.args[0].first, "transa");  // file order kept
  EXPECT_EQ(std::get<RawJson>(lib.args[0].second).text, "\"N\"");
  EXPECT_EQ(std::get<TensorRef>(lib.args[3].second).tensor, "t1");
  ASSERT_TRUE(b.modules[0].ptx);
  EXPECT_EQ(*b.modules[0].ptx, kPtx);
  ASSERT_TRUE(b.match);
  EXPECT_EQ(b.match->inputs[0].second, "new.x");
  EXPECT_EQ(resolve_interface_ref(b, "new.x", false), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_EQ(resolve_interface_ref(b, "new.out0", true), (std::pair<size_t, size_t>{1, 0}));
  EXPECT_FALSE(resolve_interface_ref(b, "new.out0", false));
}

TEST(RoundTrip, ReadWriteReadIsEqual) {
  TempDir a, b;
  write_bundle_dir(a.path(), valid_manifest());
  Bundle first = read_bundle(a.path());
  write_bundle(first, b.path());
  Bundle second = read_bundle(b.path());
  EXPECT_EQ(first, second);
}

// A model built in C++ with every argument form, including the awkward values.
Bundle every_form_bundle() {
  Bundle b;
  b.created_by = RawJson{R"({"tool":"test"})"};
  b.modules.push_back(Module{"m0", "ptx/m0.ptx", sha256_hex(kPtx), "k.cu", "sm_90", {"-O3", "-lineinfo"}, kPtx});
  Program p;
  p.name = "ref";
  p.role = Role::Reference;
  p.storages = {{"s0", 64, "cuda"}};
  p.tensors = {{"t0", "s0", 0, {4, 4}, {4, 1}, DType::Float32}, {"t1", "s0", 2, {2}, {-1}, DType::Int8}};
  p.inputs = {{"x", "t0", InputKind::Input, "", std::string(64, 'a')}, {"p.w", "t1", InputKind::Buffer, "", "", true}};
  p.outputs = {{"y", "t0", "", ""}};
  AtenOp a;
  a.name = "aten::clamp_";
  a.overload = "default";
  a.args = {Arg{TensorRef{"t0", std::nullopt}},
            Arg{Scalar{ScalarType::Float, 0, -std::numeric_limits<double>::infinity(), 0}},
            Arg{Scalar{ScalarType::Float, 0, std::numeric_limits<double>::quiet_NaN(), 0}},
            Arg{Scalar{ScalarType::Complex, 0, 1.5, -2.0}},
            Arg{ListArg{{Arg{Scalar{ScalarType::Int, -7, 0, 0}}, Arg{ListArg{{Arg{NoneArg{}}}}}}}},
            Arg{StringArg{"mean"}}, Arg{DTypeArg{DType::BFloat16}}, Arg{LayoutArg{"strided"}},
            Arg{DeviceArg{"cuda:0"}}, Arg{MemoryFormatArg{"channels_last"}}, Arg{Scalar{ScalarType::Bool, 1, 0, 0}}};
  a.kwargs = {{"zeta", Arg{NoneArg{}}}, {"alpha", Arg{Scalar{ScalarType::Int, 2, 0, 0}}}};  // not sorted
  a.outputs = {"t0"};
  a.mutates = {"t0"};
  a.from = "python";
  p.ops.push_back(a);
  LaunchOp l;
  l.module = "m0";
  l.kernel = "_Z9fused_minPKfPfii";
  l.grid = {2, 3, 4};
  l.block = {32, 4, 2};
  l.shared_bytes = 128;
  l.args = {Arg{TensorRef{"t0", 8}}, Arg{Scalar{ScalarType::U64, int64_t(0xffffffffffffffffull), 0, 0}},
            Arg{Scalar{ScalarType::S8, -128, 0, 0}}, Arg{Scalar{ScalarType::Pred, 1, 0, 0}},
            Arg{Scalar{ScalarType::F32, 0, 0.25, 0}}, Arg{BytesArg{{0x00, 0xff, 0x80}}},
            Arg{PointerArg{0x7f0012345678ull}}};
  l.stream = 7;
  l.source_lines = true;
  p.ops.push_back(l);
  p.ops.push_back(LibraryOp{"cublas", "cublasSgemm_v2",
                            {{"transa", RawJson{"\"T\""}}, {"A", TensorRef{"t0", 0}}, {"dims", RawJson{"[1,2,3]"}}},
                            {"t0"}});
  p.ops.push_back(CopyOp{TensorRef{"t0", 0}, TensorRef{"t0", 32}, 32});
  b.programs.push_back(p);
  b.match = Match{{{"ref.x", "ref.p.w"}}, {{"ref.y", "ref.y"}}};
  b.tolerance = Tolerance{1e-3, 0};
  return b;
}

TEST(RoundTrip, ModelWriteReadIsEqual) {
  Bundle original = every_form_bundle();
  ASSERT_TRUE(validate(original).empty()) << BundleError(validate(original)).what();
  TempDir dir;
  write_bundle(original, dir.path());
  Bundle back = read_bundle(dir.path());
  EXPECT_EQ(original, back);
  // Spot-check values that JSON cannot hold natively.
  const auto& a = std::get<AtenOp>(back.programs[0].ops[0]);
  EXPECT_TRUE(std::isinf(std::get<Scalar>(a.args[1].value).f));
  EXPECT_TRUE(std::isnan(std::get<Scalar>(a.args[2].value).f));
  EXPECT_EQ(a.kwargs[0].first, "zeta");
  const auto& l = std::get<LaunchOp>(back.programs[0].ops[1]);
  EXPECT_EQ(uint64_t(std::get<Scalar>(l.args[1].value).i), 0xffffffffffffffffull);
  EXPECT_EQ(std::get<PointerArg>(l.args[6].value).address, 0x7f0012345678ull);
}

TEST(RoundTrip, ManifestTextIsStable) {
  Bundle b = every_form_bundle();
  std::string text = to_manifest_json(b);
  Bundle again = parse_manifest(text);
  for (auto& m : again.modules) m.ptx = b.modules[0].ptx;  // parse_manifest does not load files
  EXPECT_EQ(to_manifest_json(again), text);
}

TEST(Write, RefusesAnInvalidBundle) {
  Bundle b = every_form_bundle();
  b.programs[0].tensors[0].storage = "nope";
  TempDir dir;
  try {
    write_bundle(b, dir.path() / "out");
    FAIL() << "expected BundleError";
  } catch (const BundleError& e) {
    EXPECT_NE(std::string(e.what()).find("programs[0].tensors[0].storage: unknown storage id \"nope\""),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(std::filesystem::exists(dir.path() / "out" / "manifest.json"));
}

TEST(Write, RefusesAModuleWithoutPtx) {
  Bundle b = every_form_bundle();
  b.modules[0].ptx.reset();
  TempDir dir;
  EXPECT_THROW(write_bundle(b, dir.path()), BundleError);
}

TEST(Read, PlainTarArchive) {
  TempDir dir;
  write_bundle_dir(dir.path() / "bundle", valid_manifest());
  std::string cmd = "tar -C '" + dir.path().string() + "' -cf '" + (dir.path() / "b.tar").string() + "' bundle";
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  Bundle from_tar = read_bundle(dir.path() / "b.tar");
  Bundle from_dir = read_bundle(dir.path() / "bundle");
  EXPECT_EQ(from_tar, from_dir);
}

TEST(Read, PaxTarWithLongNames) {
  // Python's tarfile writes pax headers; a long folder name forces a path record.
  TempDir dir;
  std::string folder(120, 'b');
  write_bundle_dir(dir.path() / folder, valid_manifest());
  std::string cmd = "tar --format=pax -C '" + dir.path().string() + "' -cf '" + (dir.path() / "b.tar").string() +
                    "' " + folder;
  ASSERT_EQ(std::system(cmd.c_str()), 0);
  EXPECT_EQ(read_bundle(dir.path() / "b.tar").programs.size(), 2u);
}

TEST(Read, CompressedTarIsLeftToPython) {
  TempDir dir;
  write_text(dir.path() / "b.tar.gz", "not really");
  try {
    read_bundle(dir.path() / "b.tar.gz");
    FAIL();
  } catch (const BundleError& e) {
    EXPECT_NE(std::string(e.what()).find("Python reader"), std::string::npos);
  }
}
