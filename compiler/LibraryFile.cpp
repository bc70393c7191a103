// Library files (include/metal2vk/library_file.h): reader and writer.
#include "metal2vk/library_file.h"

#include <cerrno>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>
#include <stdexcept>
#include <unistd.h>
#include <unordered_set>

namespace m2v {

namespace {

constexpr char kMagic[8] = {'M', '2', 'V', 'L', 'I', 'B', '0', '3'};
constexpr char kOlderMagic[6] = {'M', '2', 'V', 'L', 'I', 'B'};  // the same prefix, another format version
// A kernel record's variant bits: which builds follow the portable module, in this order.
constexpr uint64_t kHasCooperative = 1, kHasNativeBfloat16 = 2;
// A deferred source's compile flags.
constexpr uint64_t kFastMath = 1, kNoCooperativeMatrix = 2, kNativeBfloat16 = 4, kNoAbortChecks = 8;
// Bounds that no real kernel reaches; a larger length field means a damaged file, not a reason to allocate.
constexpr uint64_t kMaxJsonBytes = uint64_t(64) << 20;
constexpr uint64_t kMaxSpirvWords = uint64_t(256) << 20;
constexpr uint64_t kMaxKernels = uint64_t(1) << 24;
constexpr uint64_t kMaxTextBytes = uint64_t(1) << 30;

uint64_t fnv1a64(std::string_view bytes) {
  uint64_t h = 0xcbf29ce484222325ull;
  for (unsigned char c : bytes) {
    h ^= c;
    h *= 0x100000001b3ull;
  }
  return h;
}

void appendU64(std::string& out, uint64_t v) { out.append(reinterpret_cast<const char*>(&v), 8); }
void appendString(std::string& out, std::string_view s) {
  appendU64(out, s.size());
  out += s;
}

// Reads fields in order from a byte range, throwing with what was being read when the range runs out.
struct Cursor {
  std::string_view bytes;
  size_t& pos;

  uint64_t u64(const char* what) {
    if (bytes.size() - pos < 8) throw std::runtime_error(std::string("truncated (") + what + ")");
    uint64_t v;
    std::memcpy(&v, bytes.data() + pos, 8);
    pos += 8;
    return v;
  }
  std::string_view take(uint64_t n, const char* what) {
    if (bytes.size() - pos < n) throw std::runtime_error(std::string("truncated (") + what + ")");
    std::string_view v = bytes.substr(pos, n);
    pos += n;
    return v;
  }
  std::string string(const char* what) {
    uint64_t n = u64(what);
    if (n > kMaxTextBytes) throw std::runtime_error(std::string("damaged (length of ") + what + ")");
    return std::string(take(n, what));
  }
  uint64_t count(const char* what) {
    uint64_t n = u64(what);
    if (n > kMaxKernels) throw std::runtime_error(std::string("damaged (") + what + " " + std::to_string(n) + ")");
    return n;
  }
};

void appendSource(std::string& out, const DeferredSource& source) {
  appendString(out, source.name);
  appendString(out, source.body);
  appendU64(out, (source.fastMath ? kFastMath : 0) | (source.cooperativeMatrix ? 0 : kNoCooperativeMatrix) |
                     (source.nativeBfloat16 ? kNativeBfloat16 : 0) | (source.abortChecks ? 0 : kNoAbortChecks));
  appendU64(out, source.metalVersion);
  appendU64(out, source.warnings.size());
  for (const std::string& w : source.warnings) appendString(out, w);
  appendU64(out, source.entries.size());
  for (const DeferredEntry& e : source.entries) {
    appendString(out, e.name);
    appendString(out, e.instantiation);
  }
}

DeferredSource readSource(Cursor& in) {
  DeferredSource source;
  source.name = in.string("source name");
  source.body = in.string("source body");
  uint64_t flags = in.u64("compile flags");
  if (flags & ~(kFastMath | kNoCooperativeMatrix | kNativeBfloat16 | kNoAbortChecks))
    throw std::runtime_error("damaged (compile flags " + std::to_string(flags) + ")");
  source.fastMath = flags & kFastMath;
  source.cooperativeMatrix = !(flags & kNoCooperativeMatrix);
  source.nativeBfloat16 = flags & kNativeBfloat16;
  source.abortChecks = !(flags & kNoAbortChecks);
  source.metalVersion = uint32_t(in.u64("Metal version"));
  for (uint64_t n = in.count("warning count"); n > 0; --n) source.warnings.push_back(in.string("warning"));
  for (uint64_t n = in.count("entry count"); n > 0; --n) {
    DeferredEntry e;
    e.name = in.string("entry name");
    e.instantiation = in.string("instantiation");
    source.entries.push_back(std::move(e));
  }
  return source;
}

CompiledModule readModule(Cursor& in) {
  CompiledModule m;
  uint64_t jsonBytes = in.u64("reflection length");
  if (jsonBytes > kMaxJsonBytes) throw std::runtime_error("damaged (reflection length " + std::to_string(jsonBytes) + ")");
  std::string json(in.take(jsonBytes, "reflection"));
  std::string error;
  auto reflection = reflectionFromJson(json, &error);
  if (!reflection) throw std::runtime_error("damaged reflection: " + error);
  m.reflection = std::move(*reflection);
  uint64_t words = in.u64("SPIR-V length");
  if (words == 0 || words > kMaxSpirvWords)
    throw std::runtime_error("damaged (SPIR-V length " + std::to_string(words) + " of '" + m.reflection.entry + "')");
  std::string_view code = in.take(words * 4, "SPIR-V");
  m.spirv.resize(words);
  std::memcpy(m.spirv.data(), code.data(), code.size());
  if (m.spirv[0] != 0x07230203u) throw std::runtime_error("damaged (no SPIR-V module for '" + m.reflection.entry + "')");
  return m;
}

void appendModule(std::string& out, const CompiledModule& m) {
  std::string json = toJson(m.reflection, -1);  // compact
  appendU64(out, json.size());
  out += json;
  appendU64(out, m.spirv.size());
  out.append(reinterpret_cast<const char*>(m.spirv.data()), m.spirv.size() * 4);
}

std::string readWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw std::runtime_error(path + ": cannot open the library file: " + std::strerror(errno));
  std::string bytes;
  in.seekg(0, std::ios::end);
  std::streamoff size = in.tellg();
  if (size < 0) throw std::runtime_error(path + ": cannot read the library file");
  bytes.resize(size_t(size));
  in.seekg(0);
  if (!in.read(bytes.data(), size)) throw std::runtime_error(path + ": cannot read the library file");
  return bytes;
}

}  // namespace

void appendKernelRecord(std::string& out, const CompiledKernel& kernel) {
  appendU64(out, (kernel.cooperative ? kHasCooperative : 0) | (kernel.nativeBfloat16 ? kHasNativeBfloat16 : 0));
  appendModule(out, kernel);
  if (kernel.cooperative) appendModule(out, *kernel.cooperative);
  if (kernel.nativeBfloat16) appendModule(out, *kernel.nativeBfloat16);
}

CompiledKernel readKernelRecord(std::string_view bytes, size_t& pos) {
  Cursor in{bytes, pos};
  uint64_t variants = in.u64("variant bits");
  if (variants & ~(kHasCooperative | kHasNativeBfloat16))
    throw std::runtime_error("damaged (variant bits " + std::to_string(variants) + ")");
  CompiledKernel kernel = readModule(in);
  auto variant = [&](const char* what) {
    CompiledModule m = readModule(in);
    if (m.reflection.entry != kernel.reflection.entry)
      throw std::runtime_error(std::string("damaged (") + what + " build of '" + kernel.reflection.entry + "' names '" +
                               m.reflection.entry + "')");
    return std::make_shared<const CompiledModule>(std::move(m));
  };
  if (variants & kHasCooperative) kernel.cooperative = variant("cooperative");
  if (variants & kHasNativeBfloat16) kernel.nativeBfloat16 = variant("native-bfloat16");
  return kernel;
}

LibraryContents readLibrary(const std::string& path) {
  const std::string bytes = readWholeFile(path);
  if (bytes.size() >= sizeof kMagic && std::memcmp(bytes.data(), kOlderMagic, sizeof kOlderMagic) == 0 &&
      std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw std::runtime_error(path + ": library file of another format version ('" + bytes.substr(0, sizeof kMagic) +
                             "', this metal2vk reads '" + std::string(kMagic, sizeof kMagic) +
                             "'): rebuild the library");
  if (bytes.size() < sizeof kMagic || std::memcmp(bytes.data(), kMagic, sizeof kMagic) != 0)
    throw std::runtime_error(path + ": not a metal2vk library file (written by 'm2v metal -c' or 'm2v metallib')");
  if (bytes.size() < sizeof kMagic + 8) throw std::runtime_error(path + ": damaged library file (truncated)");
  std::string_view body(bytes.data() + sizeof kMagic, bytes.size() - sizeof kMagic - 8);
  uint64_t stored;
  std::memcpy(&stored, bytes.data() + bytes.size() - 8, 8);
  if (stored != fnv1a64(body)) throw std::runtime_error(path + ": damaged library file (checksum mismatch)");
  LibraryContents contents;
  size_t pos = 0;
  try {
    Cursor in{body, pos};
    uint64_t versionBytes = in.u64("compiler version");
    if (versionBytes > 4096) throw std::runtime_error("damaged (compiler version length)");
    std::string_view version = in.take(versionBytes, "compiler version");
    if (version != compilerVersion())
      throw std::runtime_error("written by metal2vk compiler '" + std::string(version) + "', this one is '" +
                               compilerVersion() + "': rebuild the library");
    uint64_t count = in.count("kernel count");
    contents.kernels.reserve(count);
    for (uint64_t i = 0; i < count; ++i) contents.kernels.push_back(readKernelRecord(body, pos));
    for (uint64_t n = in.count("source count"); n > 0; --n) contents.sources.push_back(readSource(in));
    if (pos != body.size()) throw std::runtime_error("damaged (bytes after the last source)");
  } catch (const std::runtime_error& e) {
    throw std::runtime_error(path + ": library file " + e.what());
  }
  return contents;
}

std::vector<CompiledKernel> readLibraryFile(const std::string& path) {
  LibraryContents contents = readLibrary(path);
  if (!contents.sources.empty())
    throw std::runtime_error(path + ": library file holds deferred sources (" + contents.sources[0].name +
                             "): read it as a whole library");
  return std::move(contents.kernels);
}

void writeLibraryFile(const std::string& path, const std::vector<CompiledKernel>& kernels) {
  writeLibrary(path, LibraryContents{kernels, {}});
}

void writeLibrary(const std::string& path, const LibraryContents& contents) {
  std::unordered_set<std::string> names;
  auto unique = [&](const std::string& name) {
    if (!names.insert(name).second)
      throw std::runtime_error(path + ": kernel '" + name + "' appears twice in the library");
  };
  for (const CompiledKernel& k : contents.kernels) unique(k.reflection.entry);
  for (const DeferredSource& s : contents.sources)
    for (const DeferredEntry& e : s.entries) unique(e.name);
  std::string bytes(kMagic, sizeof kMagic);
  appendString(bytes, compilerVersion());
  appendU64(bytes, contents.kernels.size());
  for (const CompiledKernel& k : contents.kernels) appendKernelRecord(bytes, k);
  appendU64(bytes, contents.sources.size());
  for (const DeferredSource& s : contents.sources) appendSource(bytes, s);
  appendU64(bytes, fnv1a64(std::string_view(bytes).substr(sizeof kMagic)));

  namespace fs = std::filesystem;
  fs::path target(path);
  fs::path tmp = target;
  tmp += ".tmp." + std::to_string(::getpid()) + "." + std::to_string(std::random_device{}());
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    if (!out) throw std::runtime_error(path + ": cannot write the library file: " + std::strerror(errno));
    out.write(bytes.data(), std::streamsize(bytes.size()));
    out.flush();
    if (!out) {
      out.close();
      std::error_code ec;
      fs::remove(tmp, ec);
      throw std::runtime_error(path + ": cannot write the library file (disk full?)");
    }
  }
  std::error_code ec;
  fs::rename(tmp, target, ec);
  if (ec) {
    fs::remove(tmp, ec);
    throw std::runtime_error(path + ": cannot write the library file: " + ec.message());
  }
}

}  // namespace m2v
