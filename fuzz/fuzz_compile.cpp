// libFuzzer: the whole compile path (rewriter, clang, lowering, SPIR-V emission and validation) on arbitrary text.
// Seeds: the compiler suite's kernels, the corpus and MLX's .metal files. Mutation is at the token level half of the
// time (LLVMFuzzerCustomMutator below: delete, duplicate, swap or move tokens, insert one of fuzz/metal.dict's words),
// libFuzzer's byte-level mutators the other half.
// Any diagnostic is fine; a crash, a sanitizer report, an exception or a hang is a finding.
#include <pthread.h>

#include <cctype>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <random>
#include <string>
#include <vector>

#include "metal2vk/compiler.h"

// As `m2v` does, the compile runs on a thread with a large stack (clang recurses once per operand of an expression).
extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size > 64 * 1024) return -1;  // keeps each execution short; the hostile-input test covers large files
  struct Job {
    std::string text;
  } job{std::string(reinterpret_cast<const char*>(data), size)};
  auto run = [](void* p) -> void* {
    m2v::CompileOptions options;
    options.validate = true;
    m2v::CompileResult r = m2v::compileSource(static_cast<Job*>(p)->text, "fuzz.metal", options);
    (void)r;
    return nullptr;
  };
  pthread_attr_t attr;
  pthread_t thread;
  pthread_attr_init(&attr);
  pthread_attr_setstacksize(&attr, size_t(512) << 20);
  if (pthread_create(&thread, &attr, run, &job) == 0)
    pthread_join(thread, nullptr);
  else
    run(&job);
  pthread_attr_destroy(&attr);
  return 0;
}

namespace {

// Splits C-like text into tokens: identifiers/numbers, runs of white space, and single punctuation characters.
std::vector<std::string> tokens(const uint8_t* data, size_t size) {
  std::vector<std::string> out;
  size_t i = 0;
  auto word = [](uint8_t c) { return std::isalnum(c) || c == '_' || c == '.'; };
  while (i < size) {
    size_t j = i + 1;
    if (word(data[i]))
      while (j < size && word(data[j])) ++j;
    else if (std::isspace(data[i]))
      while (j < size && std::isspace(data[j])) ++j;
    out.emplace_back(reinterpret_cast<const char*>(data + i), j - i);
    i = j;
  }
  return out;
}

const char* const kWords[] = {"kernel", "device", "constant", "threadgroup", "template", "typename", "[[buffer(0)]]",
                              "[[buffer(31)]]", "[[threadgroup(0)]]", "[[thread_position_in_grid]]",
                              "[[function_constant(0)]]", "[[host_name(\"h\")]]", "threadgroup_barrier(mem_flags::mem_threadgroup);",
                              "simd_sum(", "atomic_fetch_add_explicit(", "half4", "float", "uint3", "bfloat", "struct",
                              "for (;;) {", "if (", "while (", "return;", "}", "{", "(", ")", "<", ">", ";", ",", "*",
                              "&", "[", "]", "::", "#define X ", "#include <metal_stdlib>\n", "/*", "\"", "'"};

}  // namespace

extern "C" size_t LLVMFuzzerMutate(uint8_t* data, size_t size, size_t maxSize);

extern "C" size_t LLVMFuzzerCustomMutator(uint8_t* data, size_t size, size_t maxSize, unsigned seed) {
  std::minstd_rand rng(seed);
  if (rng() % 2 || size == 0) return LLVMFuzzerMutate(data, size, maxSize);
  std::vector<std::string> t = tokens(data, size);
  auto pick = [&] { return size_t(rng() % t.size()); };
  for (unsigned n = 1 + rng() % 4; n-- && !t.empty();) {
    switch (rng() % 5) {
      case 0: t.erase(t.begin() + std::ptrdiff_t(pick())); break;                             // delete
      case 1: { size_t i = pick(); t.insert(t.begin() + std::ptrdiff_t(i), t[i]); break; }    // duplicate
      case 2: std::swap(t[pick()], t[pick()]); break;                                           // swap
      case 3: {                                                                                 // move
        size_t i = pick();
        std::string tok = t[i];
        t.erase(t.begin() + std::ptrdiff_t(i));
        t.insert(t.begin() + std::ptrdiff_t(t.empty() ? 0 : pick()), tok);
        break;
      }
      default:                                                                                  // insert a word
        t.insert(t.begin() + std::ptrdiff_t(pick()), kWords[rng() % (sizeof kWords / sizeof *kWords)]);
    }
  }
  std::string out;
  for (const std::string& tok : t) out += tok;
  if (out.size() > maxSize) out.resize(maxSize);
  std::memcpy(data, out.data(), out.size());
  return out.size();
}
