// MLX's kernel library as `m2v metal -c` stores it (deferred_source.h), against MLX's own list of its entry points
// (entry_points.tsv beside the checkout): every entry point is there, deferred or compiled, and an entry compiled
// from its deferred source is the module the whole file compiles to. Skipped without an MLX checkout.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <set>
#include <sstream>

#include "metal2vk/deferred_source.h"

namespace fs = std::filesystem;

namespace {

fs::path mlxRoot() {
  const char* env = std::getenv("M2V_MLX_ROOT");
  return env && *env ? fs::path(env) : fs::path(M2V_SOURCE_DIR) / ".." / "shared" / "third_party" / "mlx";
}

// MLX's build flags for its kernel library (mlx/backend/metal/kernels/CMakeLists.txt).
m2v::CompileOptions mlxOptions() {
  m2v::CompileOptions options;
  options.includeDirs = {mlxRoot().string()};
  options.warnings = {"-Wall", "-Wextra", "-Wno-c++17-extensions", "-Wno-c++20-extensions"};
  return options;
}

// entry_points.tsv: file -> its entry points, for the files outside Metal 4's NAX set.
std::map<std::string, std::set<std::string>> listedEntries() {
  std::map<std::string, std::set<std::string>> files;
  std::ifstream in(mlxRoot() / "entry_points.tsv");
  std::string line;
  std::getline(in, line);  // header
  while (std::getline(in, line)) {
    std::vector<std::string> fields;
    std::stringstream ss(line);
    for (std::string f; std::getline(ss, f, '\t');) fields.push_back(f);
    if (fields.size() >= 2 && (fields.size() < 4 || fields[3].empty())) files[fields[0]].insert(fields[1]);
  }
  return files;
}

// The file as `m2v metal -c` keeps it, and its body's own kernels compiled.
m2v::DeferredFile defer(const std::string& file) {
  std::optional<m2v::DeferredFile> d = m2v::deferFile((mlxRoot() / file).string(), mlxOptions());
  EXPECT_TRUE(d) << file;
  return d.value_or(m2v::DeferredFile{});
}

class DeferredMlx : public ::testing::Test {
 protected:
  void SetUp() override {
    if (!fs::exists(mlxRoot() / "entry_points.tsv"))
      GTEST_SKIP() << "no MLX checkout with entry_points.tsv at " << mlxRoot() << " (set M2V_MLX_ROOT)";
  }
};

TEST_F(DeferredMlx, EveryEntryPointOfTheLibraryIsKept) {
  size_t total = 0;
  for (const auto& [file, listed] : listedEntries()) {
    m2v::DeferredFile d = defer(file);
    ASSERT_EQ(d.body.status, m2v::Status::Ok) << file << ": " << d.body.diagnostics.format();
    std::set<std::string> kept;
    for (const m2v::CompiledKernel& k : d.body.kernels) kept.insert(k.reflection.entry);
    for (const m2v::DeferredEntry& e : d.source.entries) EXPECT_TRUE(kept.insert(e.name).second) << e.name;
    EXPECT_EQ(kept, listed) << file;
    total += kept.size();
  }
  EXPECT_EQ(total, 16143u);  // entry_points.tsv's count outside the NAX files
}

TEST_F(DeferredMlx, AnEntryCompilesToTheModuleOfTheWholeFile) {
  for (const char* file : {"mlx/backend/metal/kernels/softmax.metal", "mlx/backend/metal/kernels/rms_norm.metal",
                           "mlx/backend/metal/kernels/arange.metal"}) {
    m2v::DeferredFile d = defer(file);
    ASSERT_FALSE(d.source.entries.empty()) << file;
    m2v::CompileResult whole = m2v::compileFile((mlxRoot() / file).string(), mlxOptions());
    ASSERT_EQ(whole.status, m2v::Status::Ok) << whole.diagnostics.format();
    for (const m2v::DeferredEntry& entry : d.source.entries) {
      m2v::CompileResult alone =
          m2v::compileSource(d.source.sourceFor(entry), d.source.name, d.source.optionsFor(entry));
      ASSERT_EQ(alone.status, m2v::Status::Ok) << entry.name << ": " << alone.diagnostics.format();
      ASSERT_EQ(alone.kernels.size(), 1u) << entry.name;
      auto same = std::find_if(whole.kernels.begin(), whole.kernels.end(),
                               [&](const m2v::CompiledKernel& k) { return k.reflection.entry == entry.name; });
      ASSERT_NE(same, whole.kernels.end()) << entry.name;
      EXPECT_EQ(alone.kernels[0].spirv, same->spirv) << entry.name;
    }
  }
}

// The quantized matrix-vector products every quantized decode step runs (MLX's JIT path cannot build them at the
// pinned commit): their deferred entries compile.
TEST_F(DeferredMlx, QuantizedMatrixVectorEntriesCompile) {
  for (auto [file, entry] :
       {std::pair{"mlx/backend/metal/kernels/quantized.metal", "affine_qmv_fast_float16_t_gs_64_b_4_batch_0"},
        std::pair{"mlx/backend/metal/kernels/quantized.metal", "affine_qmv_bfloat16_t_gs_32_b_3_batch_1"},
        std::pair{"mlx/backend/metal/kernels/fp_quantized.metal", "mxfp4_qmv_float_gs_32_b_4_batch_0"}}) {
    m2v::DeferredFile d = defer(file);
    auto it = std::find_if(d.source.entries.begin(), d.source.entries.end(),
                           [&](const m2v::DeferredEntry& e) { return e.name == entry; });
    ASSERT_NE(it, d.source.entries.end()) << entry;
    m2v::CompileResult r = m2v::compileSource(d.source.sourceFor(*it), d.source.name, d.source.optionsFor(*it));
    ASSERT_EQ(r.status, m2v::Status::Ok) << entry << ": " << r.diagnostics.format();
    ASSERT_EQ(r.kernels.size(), 1u);
    EXPECT_EQ(r.kernels[0].reflection.entry, entry);
  }
}

}  // namespace
