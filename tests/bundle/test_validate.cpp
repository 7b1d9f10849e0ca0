// One malformed-input test per rule; each asserts the exact file + JSON path + message.
#include <gtest/gtest.h>

#include "bundle/io.h"
#include "fixture.h"

using namespace dirigo::bundle;
using namespace dirigo::bundle::testing;

namespace {

std::string read_error_text(const std::filesystem::path& dir) {
  try {
    read_bundle(dir);
  } catch (const BundleError& e) {
    EXPECT_FALSE(e.issues().empty());
    return e.what();
  }
  return "";
}

std::string error_of(const J& manifest) {
  TempDir dir;
  write_bundle_dir(dir.path(), manifest);
  return read_error_text(dir.path());
}

void expect_error(const J& manifest, const std::string& needle) {
  std::string err = error_of(manifest);
  EXPECT_NE(err.find(needle), std::string::npos) << "expected: " << needle << "\ngot: " << err;
}

J& cand(J& m) { return m["programs"][1]; }
J& ref(J& m) { return m["programs"][0]; }

}  // namespace

TEST(Validate, FixtureIsValid) { EXPECT_EQ(error_of(valid_manifest()), ""); }

TEST(Validate, UnknownKeysAreAccepted) {
  J m = valid_manifest();
  m["future_field"] = J{{"x", 1}};
  cand(m)["ops"][1]["occupancy_hint"] = 3;
  cand(m)["tensors"][0]["requires_grad"] = false;
  cand(m)["ops"][4]["args"][0]["note"] = "extra";
  EXPECT_EQ(error_of(m), "");
}

// ---- structure
TEST(Validate, NotJson) {
  TempDir dir;
  write_text(dir.path() / "manifest.json", "{\"format\": \"dirigo-bundle\", ");
  EXPECT_NE(read_error_text(dir.path()).find("manifest.json: not valid JSON"), std::string::npos);
}

TEST(Validate, MissingManifest) {
  TempDir dir;
  EXPECT_NE(read_error_text(dir.path()).find("manifest.json: file not found in the bundle"), std::string::npos);
}

TEST(Validate, TopLevelNotAnObject) {
  TempDir dir;
  write_text(dir.path() / "manifest.json", "[1, 2]");
  EXPECT_NE(read_error_text(dir.path()).find("manifest.json: expected an object, got array"), std::string::npos);
}

TEST(Validate, WrongFormat) {
  J m = valid_manifest();
  m["format"] = "other";
  expect_error(m, "manifest.json: format: expected \"dirigo-bundle\", got \"other\"");
}

TEST(Validate, UnknownVersion) {
  J m = valid_manifest();
  m["version"] = 2;
  expect_error(m, "manifest.json: version: unsupported version 2 (this reader knows 1)");
}

TEST(Validate, MissingRequiredField) {
  J m = valid_manifest();
  cand(m)["tensors"][0].erase("dtype");
  expect_error(m, "manifest.json: programs[1].tensors[0].dtype: missing required field");
}

TEST(Validate, WrongFieldType) {
  J m = valid_manifest();
  cand(m)["tensors"][2]["shape"] = "4x256";
  expect_error(m, "manifest.json: programs[1].tensors[2].shape: expected an array, got string");
}

TEST(Validate, FloatWhereIntegerExpected) {
  J m = valid_manifest();
  ref(m)["storages"][0]["nbytes"] = 40.5;
  expect_error(m, "manifest.json: programs[0].storages[0].nbytes: expected an integer, got 40.5");
}

TEST(Validate, IntegerOutOfRange) {
  J m = valid_manifest();
  ref(m)["storages"][0]["nbytes"] = 18446744073709551615ull;
  expect_error(m, "manifest.json: programs[0].storages[0].nbytes: integer 18446744073709551615 is out of range");
}

TEST(Validate, DeepNestingIsAnErrorNotACrash) {
  J m = valid_manifest();
  std::string deep(200000, '[');
  deep += std::string(200000, ']');
  std::string text = m.dump();
  text.insert(text.size() - 1, ", \"deep\": " + deep);
  TempDir dir;
  write_text(dir.path() / "manifest.json", text);
  EXPECT_NE(read_error_text(dir.path()).find("manifest.json: JSON nested deeper than 64 levels"), std::string::npos);
}

TEST(Validate, ArgListsNestedTooDeep) {
  J m = valid_manifest();
  J arg = J{{"none", true}};
  for (int i = 0; i < 20; ++i) arg = J{{"list", J::array({arg})}};
  cand(m)["ops"][4]["args"][1] = arg;
  expect_error(m, "manifest.json: programs[1].ops[4].args[1]" + [] {
    std::string s;
    for (int i = 0; i < 16; ++i) s += ".list[0]";
    return s;
  }() + ".list: argument lists nested deeper than 16");
}

TEST(Validate, UnknownOpKindIsRejectedByName) {
  J m = valid_manifest();
  cand(m)["ops"][2] = J{{"kind", "triton"}, {"name", "k"}};
  expect_error(m, "manifest.json: programs[1].ops[2].kind: unknown op kind \"triton\"");
}

TEST(Validate, UnknownArgumentForm) {
  J m = valid_manifest();
  cand(m)["ops"][4]["args"][1] = J{{"symint", 3}};
  expect_error(m, "manifest.json: programs[1].ops[4].args[1]: unknown argument form");
}

TEST(Validate, AmbiguousArgumentForm) {
  J m = valid_manifest();
  cand(m)["ops"][4]["args"][0]["string"] = "also";
  expect_error(m, "manifest.json: programs[1].ops[4].args[0]: ambiguous argument: has both \"tensor\" and \"string\"");
}

TEST(Validate, UnknownRole) {
  J m = valid_manifest();
  ref(m)["role"] = "oracle";
  expect_error(m, "manifest.json: programs[0].role: unknown role \"oracle\"");
}

TEST(Validate, UnknownInputKind) {
  J m = valid_manifest();
  cand(m)["inputs"][1]["kind"] = "weight";
  expect_error(m, "manifest.json: programs[1].inputs[1].kind: unknown input kind \"weight\"");
}

TEST(Validate, OddHexBytes) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][3] = J{{"bytes", "abc"}};
  expect_error(m, "manifest.json: programs[1].ops[1].args[3].bytes: expected an even number of hex digits");
}

TEST(Validate, BadPointerText) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][3] = J{{"pointer", "0xZZ"}, {"unbound", true}};
  expect_error(m, "manifest.json: programs[1].ops[1].args[3].pointer: expected a hex address");
}

TEST(Validate, LaunchDimsCount) {
  J m = valid_manifest();
  cand(m)["ops"][1]["grid"] = J::array({1, 1, 1, 1});
  expect_error(m, "manifest.json: programs[1].ops[1].grid: expected 1 to 3 dimensions, got 4");
}

// ---- ids unique
TEST(Validate, DuplicateTensorId) {
  J m = valid_manifest();
  cand(m)["tensors"][1]["id"] = "t0";
  expect_error(m, "manifest.json: programs[1].tensors[1].id: duplicate tensor id \"t0\"");
}

TEST(Validate, DuplicateStorageId) {
  J m = valid_manifest();
  cand(m)["storages"][2]["id"] = "s1";
  expect_error(m, "manifest.json: programs[1].storages[2].id: duplicate storage id \"s1\"");
}

TEST(Validate, DuplicateModuleId) {
  J m = valid_manifest();
  m["modules"].push_back(m["modules"][0]);
  expect_error(m, "manifest.json: modules[1].id: duplicate module id \"m0\"");
}

TEST(Validate, DuplicateProgramName) {
  J m = valid_manifest();
  cand(m)["name"] = "ref";
  expect_error(m, "manifest.json: programs[1].name: duplicate program name \"ref\"");
}

TEST(Validate, BadProgramName) {
  J m = valid_manifest();
  cand(m)["name"] = "new program";
  expect_error(m, "manifest.json: programs[1].name: program name \"new program\" must match [A-Za-z0-9_.-]+");
}

TEST(Validate, DuplicateInputName) {
  J m = valid_manifest();
  cand(m)["inputs"][1]["name"] = "x";
  expect_error(m, "manifest.json: programs[1].inputs[1].name: duplicate input name \"x\"");
}

TEST(Validate, DuplicateOutputName) {
  J m = valid_manifest();
  cand(m)["outputs"].push_back(cand(m)["outputs"][0]);
  expect_error(m, "manifest.json: programs[1].outputs[1].name: duplicate output name \"out0\"");
}

TEST(Validate, NoPrograms) {
  J m = valid_manifest();
  m["programs"] = J::array();
  m.erase("match");
  expect_error(m, "manifest.json: programs: a bundle needs at least one program");
}

// ---- references resolve
TEST(Validate, UnknownTensorInAtenArg) {
  J m = valid_manifest();
  cand(m)["ops"][4]["args"][2]["tensor"] = "t99";
  expect_error(m, "manifest.json: programs[1].ops[4].args[2].tensor: unknown tensor id \"t99\"");
}

TEST(Validate, UnknownTensorInsideArgList) {
  J m = valid_manifest();
  cand(m)["ops"][4]["args"][1]["list"][1] = J{{"tensor", "t42"}};
  expect_error(m, "manifest.json: programs[1].ops[4].args[1].list[1].tensor: unknown tensor id \"t42\"");
}

TEST(Validate, UnknownTensorInKwarg) {
  J m = valid_manifest();
  cand(m)["ops"][4]["kwargs"]["other"] = J{{"tensor", "t7"}};
  expect_error(m, "manifest.json: programs[1].ops[4].kwargs.other.tensor: unknown tensor id \"t7\"");
}

TEST(Validate, UnknownTensorInOutputsAndMutates) {
  J m = valid_manifest();
  cand(m)["ops"][4]["outputs"][0] = "t8";
  cand(m)["ops"][4]["mutates"][0] = "t9";
  std::string err = error_of(m);
  EXPECT_NE(err.find("programs[1].ops[4].outputs[0]: unknown tensor id \"t8\""), std::string::npos) << err;
  EXPECT_NE(err.find("programs[1].ops[4].mutates[0]: unknown tensor id \"t9\""), std::string::npos) << err;
}

TEST(Validate, UnknownStorageOfTensor) {
  J m = valid_manifest();
  ref(m)["tensors"][1]["storage"] = "s5";
  expect_error(m, "manifest.json: programs[0].tensors[1].storage: unknown storage id \"s5\"");
}

TEST(Validate, UnknownTensorOfInput) {
  J m = valid_manifest();
  ref(m)["inputs"][0]["tensor"] = "nope";
  expect_error(m, "manifest.json: programs[0].inputs[0].tensor: unknown tensor id \"nope\"");
}

TEST(Validate, UnknownTensorOfOutput) {
  J m = valid_manifest();
  ref(m)["outputs"][0]["tensor"] = "nope";
  expect_error(m, "manifest.json: programs[0].outputs[0].tensor: unknown tensor id \"nope\"");
}

TEST(Validate, UnknownModuleOfLaunch) {
  J m = valid_manifest();
  cand(m)["ops"][1]["module"] = "m3";
  expect_error(m, "manifest.json: programs[1].ops[1].module: unknown module id \"m3\"");
}

TEST(Validate, KernelNotInModule) {
  J m = valid_manifest();
  cand(m)["ops"][1]["kernel"] = "_Z9fused_mi";  // a prefix of the real entry does not count
  expect_error(m, "manifest.json: programs[1].ops[1].kernel: no .entry \"_Z9fused_mi\" in \"ptx/m0.ptx\"");
}

TEST(Validate, UnknownTensorInLibraryCall) {
  J m = valid_manifest();
  cand(m)["ops"][3]["args"]["A"]["tensor"] = "tA";
  cand(m)["ops"][3]["writes"][0] = "tW";
  std::string err = error_of(m);
  EXPECT_NE(err.find("programs[1].ops[3].args.A.tensor: unknown tensor id \"tA\""), std::string::npos) << err;
  EXPECT_NE(err.find("programs[1].ops[3].writes[0]: unknown tensor id \"tW\""), std::string::npos) << err;
}

TEST(Validate, UnknownTensorInCopy) {
  J m = valid_manifest();
  cand(m)["ops"][2]["src"]["tensor"] = "t77";
  expect_error(m, "manifest.json: programs[1].ops[2].src.tensor: unknown tensor id \"t77\"");
}

TEST(Validate, MatchRefersToUnknownInput) {
  J m = valid_manifest();
  m["match"]["inputs"][0][1] = "new.y";
  expect_error(m, "manifest.json: match.inputs[0][1]: no input named \"new.y\"");
}

TEST(Validate, MatchRefersToUnknownOutput) {
  J m = valid_manifest();
  m["match"]["outputs"][0][0] = "ghost.out0";
  expect_error(m, "manifest.json: match.outputs[0][0]: no output named \"ghost.out0\"");
}

TEST(Validate, MatchIsNotAPair) {
  J m = valid_manifest();
  m["match"]["inputs"][0] = J::array({"ref.x"});
  expect_error(m, "manifest.json: match.inputs[0]: expected a pair");
}

// ---- module files
TEST(Validate, ModuleFileMissing) {
  TempDir dir;
  write_bundle_dir(dir.path(), valid_manifest(), /*with_ptx=*/false);
  EXPECT_NE(read_error_text(dir.path()).find("manifest.json: modules[0].path: file \"ptx/m0.ptx\" not found in the bundle"),
            std::string::npos);
}

TEST(Validate, ModulePathEscapesBundle) {
  J m = valid_manifest();
  m["modules"][0]["path"] = "../ptx/m0.ptx";
  expect_error(m, "manifest.json: modules[0].path: path \"../ptx/m0.ptx\" must be relative and stay inside the bundle");
}

TEST(Validate, ModuleAbsolutePath) {
  J m = valid_manifest();
  m["modules"][0]["path"] = "/etc/passwd";
  expect_error(m, "manifest.json: modules[0].path: path \"/etc/passwd\" must be relative");
}

TEST(Validate, Sha256Mismatch) {
  J m = valid_manifest();
  m["modules"][0]["sha256"] = std::string(64, '0');
  expect_error(m, "manifest.json: modules[0].sha256: does not match \"ptx/m0.ptx\" (its sha256 is " + sha256_hex(kPtx) + ")");
}

TEST(Validate, Sha256Malformed) {
  J m = valid_manifest();
  m["modules"][0]["sha256"] = "abc";
  expect_error(m, "manifest.json: modules[0].sha256: expected 64 hex digits, got \"abc\"");
}

TEST(Validate, Sha256UppercaseAccepted) {
  J m = valid_manifest();
  std::string upper = sha256_hex(kPtx);
  for (char& c : upper) c = char(std::toupper(c));
  m["modules"][0]["sha256"] = upper;
  EXPECT_EQ(error_of(m), "");
}

// ---- shapes, dtypes and extents
TEST(Validate, ShapeStridesLengthsDiffer) {
  J m = valid_manifest();
  cand(m)["tensors"][0]["strides"] = J::array({1});
  expect_error(m, "manifest.json: programs[1].tensors[0].strides: has 1 entries but shape has 2");
}

TEST(Validate, NegativeSize) {
  J m = valid_manifest();
  cand(m)["tensors"][0]["shape"][1] = -1;
  expect_error(m, "manifest.json: programs[1].tensors[0].shape[1]: negative size -1");
}

TEST(Validate, NegativeOffset) {
  J m = valid_manifest();
  cand(m)["tensors"][4]["offset"] = -1;
  expect_error(m, "manifest.json: programs[1].tensors[4].offset: negative offset -1");
}

TEST(Validate, UnknownDtype) {
  J m = valid_manifest();
  cand(m)["tensors"][3]["dtype"] = "float8_e4m3";
  expect_error(m, "manifest.json: programs[1].tensors[3].dtype: unknown dtype \"float8_e4m3\"");
}

TEST(Validate, UnknownDtypeArgument) {
  J m = valid_manifest();
  cand(m)["ops"][0]["kwargs"]["dtype"]["dtype"] = "float128";
  expect_error(m, "manifest.json: programs[1].ops[0].kwargs.dtype.dtype: unknown dtype \"float128\"");
}

TEST(Validate, ViewExtentExceedsStorage) {
  J m = valid_manifest();
  cand(m)["tensors"][4]["offset"] = 900;  // 900 + 256 float32 elements > 4096 bytes
  expect_error(m, "manifest.json: programs[1].tensors[4]: view extent [900, 1156) elements of float32 needs 4624 "
                  "bytes, storage \"s0\" has 4096");
}

TEST(Validate, ViewReachesBeforeStorage) {
  J m = valid_manifest();
  cand(m)["tensors"][4]["strides"][0] = -1;  // offset 256, 256 elements going down: reaches element 1, fine
  EXPECT_EQ(error_of(m), "");
  cand(m)["tensors"][4]["offset"] = 10;
  expect_error(m, "manifest.json: programs[1].tensors[4].strides: view reaches element -245, before the start of "
                  "storage \"s0\"");
}

TEST(Validate, ElementCountOverflow) {
  J m = valid_manifest();
  cand(m)["tensors"][3]["shape"] = J::array({int64_t(1) << 40, int64_t(1) << 40});
  cand(m)["tensors"][3]["strides"] = J::array({0, 0});
  expect_error(m, "manifest.json: programs[1].tensors[3].shape: element count overflows 64 bits");
}

TEST(Validate, ExtentOverflow) {
  J m = valid_manifest();
  cand(m)["tensors"][3]["shape"] = J::array({3});
  cand(m)["tensors"][3]["strides"] = J::array({int64_t(1) << 62});
  expect_error(m, "manifest.json: programs[1].tensors[3]: view extent overflows 64 bits");
}

TEST(Validate, EmptyViewFitsAnywhere) {
  J m = valid_manifest();
  cand(m)["tensors"][3]["shape"] = J::array({0});
  cand(m)["tensors"][3]["offset"] = 1000000;
  EXPECT_EQ(error_of(m), "");
}

TEST(Validate, DataFileMissingAndWrongSize) {
  J m = valid_manifest();
  cand(m)["inputs"][1]["data"] = "data/new.w.bin";  // t3: 256 float32
  expect_error(m, "manifest.json: programs[1].inputs[1].data: file \"data/new.w.bin\" not found in the bundle");
  TempDir dir;
  write_bundle_dir(dir.path(), m);
  write_text(dir.path() / "data" / "new.w.bin", std::string(1000, '\0'));
  EXPECT_NE(read_error_text(dir.path()).find(
                "programs[1].inputs[1].data: file \"data/new.w.bin\" has 1000 bytes, the tensor needs 1024"),
            std::string::npos);
  write_text(dir.path() / "data" / "new.w.bin", std::string(1024, '\0'));
  EXPECT_EQ(read_error_text(dir.path()), "");
}

TEST(Validate, DataPathEscapesBundle) {
  J m = valid_manifest();
  ref(m)["outputs"][0]["data"] = "data/../../x.bin";
  expect_error(m, "manifest.json: programs[0].outputs[0].data: path \"data/../../x.bin\" must be relative");
}

TEST(Validate, ValueHashMalformed) {
  J m = valid_manifest();
  ref(m)["inputs"][0]["sha256"] = "xyz";
  expect_error(m, "manifest.json: programs[0].inputs[0].sha256: expected 64 hex digits, got \"xyz\"");
}

// ---- launches
TEST(Validate, GridDimensionNegative) {
  J m = valid_manifest();
  cand(m)["ops"][1]["grid"][1] = -1;
  expect_error(m, "manifest.json: programs[1].ops[1].grid[1]: grid dimension -1 must be in [0, 4294967295]");
}

TEST(Validate, BlockDimensionNegative) {
  J m = valid_manifest();
  cand(m)["ops"][1]["block"][0] = -32;
  expect_error(m, "manifest.json: programs[1].ops[1].block[0]: block dimension -32 must be in [0, 4294967295]");
}

// A launch the GPU refuses is what the program did: the bundle keeps it, check calls it a BUG.
TEST(Validate, ImpossibleLaunchesAreRecorded) {
  J m = valid_manifest();
  cand(m)["ops"][1]["block"] = J::array({256, 8, 1});
  cand(m)["ops"][1]["grid"] = J::array({0, 1, 1});
  TempDir dir;
  write_bundle_dir(dir.path(), m);
  Bundle b = read_bundle(dir.path());
  const auto& l = std::get<LaunchOp>(b.programs[1].ops[1]);
  EXPECT_EQ(l.block, (std::array<int64_t, 3>{256, 8, 1}));
  EXPECT_EQ(l.grid, (std::array<int64_t, 3>{0, 1, 1}));
}

TEST(Validate, BlockShortFormIsPadded) {
  J m = valid_manifest();
  cand(m)["ops"][1]["block"] = J::array({128});
  TempDir dir;
  write_bundle_dir(dir.path(), m);
  Bundle b = read_bundle(dir.path());
  EXPECT_EQ(std::get<LaunchOp>(b.programs[1].ops[1]).block, (std::array<int64_t, 3>{128, 1, 1}));
}

TEST(Validate, NegativeSharedBytes) {
  J m = valid_manifest();
  cand(m)["ops"][1]["shared_bytes"] = -4;
  expect_error(m, "manifest.json: programs[1].ops[1].shared_bytes: negative size -4");
}

TEST(Validate, LaunchPointerOutsideStorage) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][1]["byte_offset"] = 5000;
  expect_error(m, "manifest.json: programs[1].ops[1].args[1].byte_offset: points outside storage \"s1\" (4096 bytes)");
}

TEST(Validate, CopyBeyondStorage) {
  J m = valid_manifest();
  cand(m)["ops"][2]["nbytes"] = 4100;
  expect_error(m, "manifest.json: programs[1].ops[2].dst.byte_offset: points outside storage \"s2\" (4096 bytes)");
}

TEST(Validate, CopyNegativeSize) {
  J m = valid_manifest();
  cand(m)["ops"][2]["nbytes"] = -1;
  expect_error(m, "manifest.json: programs[1].ops[2].nbytes: negative size -1");
}

TEST(Validate, ListIsNotALaunchArgument) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][2] = J{{"list", J::array()}};
  expect_error(m, "manifest.json: programs[1].ops[1].args[2]: a list is not a launch argument");
}

TEST(Validate, BytesAreNotAnAtenArgument) {
  J m = valid_manifest();
  cand(m)["ops"][4]["args"][1] = J{{"bytes", "00"}};
  expect_error(m, "manifest.json: programs[1].ops[4].args[1]: raw bytes and unbound pointers are launch arguments only");
}

// ---- scalars typed
TEST(Validate, ScalarWithoutType) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][2].erase("type");
  expect_error(m, "manifest.json: programs[1].ops[1].args[2].type: missing required field");
}

TEST(Validate, ScalarUnknownType) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][2]["type"] = "s33";
  expect_error(m, "manifest.json: programs[1].ops[1].args[2].type: unknown scalar type \"s33\"");
}

TEST(Validate, PtxScalarTypeInAtenOp) {
  J m = valid_manifest();
  cand(m)["ops"][4]["kwargs"]["alpha"]["type"] = "f32";
  expect_error(m, "manifest.json: programs[1].ops[4].kwargs.alpha.type: PTX scalar type \"f32\" in an aten op");
}

TEST(Validate, AtenScalarTypeInLaunch) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][2]["type"] = "int";
  expect_error(m, "manifest.json: programs[1].ops[1].args[2].type: scalar type \"int\" in a launch");
}

TEST(Validate, IntScalarGivenAFloat) {
  J m = valid_manifest();
  cand(m)["ops"][4]["args"][1]["list"][0]["scalar"] = 1.5;
  expect_error(m, "manifest.json: programs[1].ops[4].args[1].list[0].scalar: expected an integer, got 1.5");
}

TEST(Validate, PtxIntegerOutOfWidth) {
  J m = valid_manifest();
  cand(m)["ops"][1]["args"][2] = J{{"scalar", 300}, {"type", "u8"}};
  expect_error(m, "manifest.json: programs[1].ops[1].args[2].scalar: 300 does not fit in u8");
  cand(m)["ops"][1]["args"][2] = J{{"scalar", -1}, {"type", "u32"}};  // signed or unsigned in the width: fine
  EXPECT_EQ(error_of(m), "");
}

TEST(Validate, FloatScalarSpellings) {
  J m = valid_manifest();
  cand(m)["ops"][4]["kwargs"]["alpha"]["scalar"] = "-inf";
  EXPECT_EQ(error_of(m), "");
  cand(m)["ops"][4]["kwargs"]["alpha"]["scalar"] = "minus infinity";
  expect_error(m, "manifest.json: programs[1].ops[4].kwargs.alpha.scalar: expected a number or one of \"nan\"");
}

TEST(Validate, BoolScalarMustBeBoolean) {
  J m = valid_manifest();
  cand(m)["ops"][4]["kwargs"]["alpha"] = J{{"scalar", 1}, {"type", "bool"}};
  expect_error(m, "manifest.json: programs[1].ops[4].kwargs.alpha.scalar: expected a boolean, got number");
}

TEST(Validate, ToleranceNegative) {
  J m = valid_manifest();
  m["tolerance"]["atol"] = -1;
  expect_error(m, "manifest.json: tolerance.atol: must be a finite number >= 0");
}

TEST(Validate, ReportsEveryIssueNotJustTheFirst) {
  J m = valid_manifest();
  ref(m)["tensors"][0]["storage"] = "sx";
  cand(m)["ops"][1]["block"][0] = -1;
  TempDir dir;
  write_bundle_dir(dir.path(), m);
  try {
    read_bundle(dir.path());
    FAIL();
  } catch (const BundleError& e) {
    ASSERT_EQ(e.issues().size(), 2u) << e.what();
    EXPECT_EQ(e.issues()[0].path, "programs[0].tensors[0].storage");
    EXPECT_EQ(e.issues()[1].path, "programs[1].ops[1].block[0]");
  }
}
