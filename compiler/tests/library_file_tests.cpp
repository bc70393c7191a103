// Library files: what the writer stores the reader gives back, and a damaged, foreign or missing file is an error
// that names the file.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>
#include <unistd.h>

#include "metal2vk/library_file.h"

namespace fs = std::filesystem;

namespace {

// Three kernels: a plain one, one whose half-precision simdgroup_matrix multiply also gets a cooperative build, and
// one that narrows float to bfloat and so also gets a native-bfloat16 build.
const char kSource[] = R"(
#include <metal_stdlib>
using namespace metal;

kernel void add_one(device float* data [[buffer(0)]], constant uint& n [[buffer(1)]],
                    uint i [[thread_position_in_grid]]) {
  if (i < n) data[i] += 1.0f;
}

kernel void tile_square(const device half* a [[buffer(0)]], device float* c [[buffer(1)]]) {
  simdgroup_matrix<half, 8, 8> m;
  simdgroup_matrix<float, 8, 8> r;
  simdgroup_load(m, a, 8);
  simdgroup_multiply(r, m, m);
  simdgroup_store(r, c, 8);
}

kernel void narrow_to_bfloat(const device float* in [[buffer(0)]], device bfloat* out [[buffer(1)]],
                             uint i [[thread_position_in_grid]]) {
  out[i] = bfloat(in[i] * 2.0f);
}
)";

class LibraryFileTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("m2v-library-file-" + std::to_string(::getpid()));
    fs::create_directories(dir_);
  }
  void TearDown() override { fs::remove_all(dir_); }

  static const std::vector<m2v::CompiledKernel>& kernels() {
    static const std::vector<m2v::CompiledKernel> k = [] {
      m2v::CompileOptions options;
      options.nativeBfloat16 = true;  // so that the file holds that variant too
      m2v::CompileResult r = m2v::compileSource(kSource, "library_file_test.metal", options);
      EXPECT_EQ(r.status, m2v::Status::Ok) << r.diagnostics.format();
      return r.kernels;
    }();
    return k;
  }

  std::string path(const std::string& name) const { return (dir_ / name).string(); }

  static std::string bytesOf(const std::string& file) {
    std::ifstream in(file, std::ios::binary);
    return std::string(std::istreambuf_iterator<char>(in), {});
  }
  static void writeBytes(const std::string& file, const std::string& bytes) {
    std::ofstream(file, std::ios::binary | std::ios::trunc).write(bytes.data(), std::streamsize(bytes.size()));
  }

  // The error readLibraryFile throws for `file` ("" when it reads the file).
  static std::string readError(const std::string& file) {
    try {
      m2v::readLibraryFile(file);
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }

  fs::path dir_;
};

void expectSameModule(const m2v::CompiledModule& a, const m2v::CompiledModule& b) {
  EXPECT_EQ(a.reflection.entry, b.reflection.entry);
  EXPECT_EQ(m2v::toJson(a.reflection), m2v::toJson(b.reflection));
  EXPECT_EQ(a.spirv, b.spirv);
}

TEST_F(LibraryFileTest, RoundTripKeepsEveryModule) {
  const auto& original = kernels();
  ASSERT_EQ(original.size(), 3u);
  const std::string file = path("three.air");
  m2v::writeLibraryFile(file, original);
  std::vector<m2v::CompiledKernel> read = m2v::readLibraryFile(file);
  ASSERT_EQ(read.size(), original.size());
  bool sawCooperative = false, sawNative = false;
  for (size_t i = 0; i < read.size(); ++i) {
    expectSameModule(read[i], original[i]);
    ASSERT_EQ(bool(read[i].cooperative), bool(original[i].cooperative)) << read[i].reflection.entry;
    if (read[i].cooperative) {
      expectSameModule(*read[i].cooperative, *original[i].cooperative);
      sawCooperative = true;
    }
    ASSERT_EQ(bool(read[i].nativeBfloat16), bool(original[i].nativeBfloat16)) << read[i].reflection.entry;
    if (read[i].nativeBfloat16) {
      expectSameModule(*read[i].nativeBfloat16, *original[i].nativeBfloat16);
      EXPECT_EQ(read[i].reflection.entry, "narrow_to_bfloat");
      sawNative = true;
    }
  }
  EXPECT_TRUE(sawCooperative) << "tile_square should carry a cooperative-matrix build";
  EXPECT_TRUE(sawNative) << "narrow_to_bfloat should carry a native-bfloat16 build";
}

TEST_F(LibraryFileTest, EmptyLibraryRoundTrips) {
  const std::string file = path("empty.metallib");
  m2v::writeLibraryFile(file, {});
  EXPECT_TRUE(m2v::readLibraryFile(file).empty());
}

TEST_F(LibraryFileTest, KernelRecordStandsAlone) {
  std::string bytes = "prefix";
  m2v::appendKernelRecord(bytes, kernels()[1]);
  size_t pos = 6;
  m2v::CompiledKernel k = m2v::readKernelRecord(bytes, pos);
  EXPECT_EQ(pos, bytes.size());
  expectSameModule(k, kernels()[1]);
  pos = 6;
  std::string cut = bytes.substr(0, bytes.size() - 5);
  EXPECT_THROW(m2v::readKernelRecord(cut, pos), std::runtime_error);
}

TEST_F(LibraryFileTest, MissingFileNamesIt) {
  std::string error = readError(path("absent.metallib"));
  EXPECT_NE(error.find("absent.metallib"), std::string::npos) << error;
  EXPECT_NE(error.find("cannot open"), std::string::npos) << error;
}

TEST_F(LibraryFileTest, ForeignFileIsRefused) {
  const std::string file = path("apple.metallib");
  writeBytes(file, "MTLB\x01\x00 not ours");
  std::string error = readError(file);
  EXPECT_NE(error.find("apple.metallib"), std::string::npos) << error;
  EXPECT_NE(error.find("not a metal2vk library file"), std::string::npos) << error;
}

TEST_F(LibraryFileTest, TruncatedFileIsRefusedAtEveryLength) {
  const std::string whole = path("whole.air");
  m2v::writeLibraryFile(whole, kernels());
  const std::string bytes = bytesOf(whole);
  const std::string cut = path("cut.air");
  // Every length short of the whole file, sampled (the file is tens of kilobytes).
  for (size_t n = 0; n < bytes.size(); n += 1 + n / 7) {
    writeBytes(cut, bytes.substr(0, n));
    std::string error = readError(cut);
    EXPECT_NE(error.find("cut.air"), std::string::npos) << "length " << n << ": " << error;
  }
}

TEST_F(LibraryFileTest, DamagedByteIsRefused) {
  const std::string file = path("damaged.air");
  m2v::writeLibraryFile(file, kernels());
  std::string bytes = bytesOf(file);
  for (size_t at : {size_t(9), bytes.size() / 2, bytes.size() - 9}) {
    std::string damaged = bytes;
    damaged[at] ^= 0x20;
    writeBytes(file, damaged);
    std::string error = readError(file);
    EXPECT_NE(error.find("damaged"), std::string::npos) << "byte " << at << ": " << error;
  }
}

TEST_F(LibraryFileTest, OtherCompilerVersionIsRefused) {
  // A well-formed file from another compiler version: magic, version, zero kernels, zero sources, checksum.
  std::string body;
  const std::string version = "metal2vk-0.0.0-abi0";
  uint64_t n = version.size(), zero = 0;
  body.append(reinterpret_cast<const char*>(&n), 8);
  body += version;
  body.append(reinterpret_cast<const char*>(&zero), 8);
  body.append(reinterpret_cast<const char*>(&zero), 8);
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : body) h = (h ^ c) * 0x100000001b3ull;
  std::string bytes = "M2VLIB03" + body;
  bytes.append(reinterpret_cast<const char*>(&h), 8);
  const std::string file = path("old.metallib");
  writeBytes(file, bytes);
  std::string error = readError(file);
  EXPECT_NE(error.find("metal2vk-0.0.0-abi0"), std::string::npos) << error;
  EXPECT_NE(error.find("rebuild"), std::string::npos) << error;
  // The same file in the earlier formats (module counts where variant bits are now; no deferred sources): refused
  // as another format.
  for (const char* older : {"M2VLIB01", "M2VLIB02"}) {
    bytes.replace(0, 8, older);
    writeBytes(file, bytes);
    error = readError(file);
    EXPECT_NE(error.find("another format version"), std::string::npos) << older << ": " << error;
    EXPECT_NE(error.find("rebuild"), std::string::npos) << older << ": " << error;
  }
}

TEST_F(LibraryFileTest, DuplicateEntryIsRefusedByTheWriter) {
  std::vector<m2v::CompiledKernel> twice{kernels()[0], kernels()[0]};
  EXPECT_THROW(m2v::writeLibraryFile(path("dup.air"), twice), std::runtime_error);
  EXPECT_FALSE(fs::exists(path("dup.air")));
}

// A library with a deferred source: the source's text, options and entries come back as written, beside the
// compiled kernels; an entry name that is also a compiled kernel's is refused.
TEST_F(LibraryFileTest, DeferredSourcesRoundTrip) {
  m2v::DeferredSource source = m2v::splitInstantiations(
      "template <typename T> kernel void k(device T* p) { *p = T(1); }\n"
      "template [[host_name(\"k_float\")]] kernel void k<float>(device float*);\n"
      "template [[host_name(\"k_int\")]] kernel void k<int>(device int*);\n",
      "two.metal");
  source.fastMath = true;
  source.metalVersion = 310;
  source.warnings = {"-Wall"};
  ASSERT_EQ(source.entries.size(), 2u);
  const std::string file = path("deferred.metallib");
  m2v::writeLibrary(file, {kernels(), {source}});
  m2v::LibraryContents read = m2v::readLibrary(file);
  ASSERT_EQ(read.kernels.size(), kernels().size());
  ASSERT_EQ(read.sources.size(), 1u);
  const m2v::DeferredSource& back = read.sources[0];
  EXPECT_EQ(back.name, "two.metal");
  EXPECT_EQ(back.body, source.body);
  EXPECT_TRUE(back.fastMath);
  EXPECT_EQ(back.metalVersion, 310u);
  EXPECT_EQ(back.warnings, std::vector<std::string>{"-Wall"});
  ASSERT_EQ(back.entries.size(), 2u);
  EXPECT_EQ(back.entries[1].name, "k_int");
  EXPECT_EQ(back.entries[1].instantiation, source.entries[1].instantiation);
  // The kernels-only reader refuses what it would lose.
  EXPECT_NE(readError(file).find("deferred sources"), std::string::npos) << readError(file);

  m2v::DeferredSource clash = source;
  clash.entries[0].name = kernels()[0].reflection.entry;
  EXPECT_THROW(m2v::writeLibrary(path("clash.metallib"), {kernels(), {clash}}), std::runtime_error);
}

TEST_F(LibraryFileTest, UnwritablePathNamesIt) {
  try {
    m2v::writeLibraryFile(path("no/such/dir/x.air"), kernels());
    FAIL() << "expected an error";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("x.air"), std::string::npos) << e.what();
  }
}

}  // namespace
