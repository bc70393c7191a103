// Library files: many compiled kernels in one file, the metal2vk counterpart of a .metallib. `m2v metal -c` writes
// one per .metal file (MLX's build names them .air), `m2v metallib` merges them into one (MLX's mlx.metallib), and
// the Metal API's newLibrary(URL) reads it.
//
// A library holds compiled kernels and deferred sources (deferred_source.h: .metal files kept as source, each
// [[host_name]] instantiation compiled when first asked for).
//
// Layout (little-endian; a string is u64 length and its bytes):
//   "M2VLIB03" | string compilerVersion() of the writer | u64 kernel count | kernel records
//   | u64 source count | source records | u64 checksum
// A kernel record is u64 variant bits (1: a cooperative-matrix build follows, 2: a native-bfloat16 build follows),
// then the portable module and the variants in that order, each as u64 JSON bytes, the reflection JSON, u64 SPIR-V
// word count and the words. A source record is string name, string body, u64 compile flags (1: fast math, 2: no
// cooperative-matrix builds, 4: native-bfloat16 builds), u64 Metal version,
// u64 warning count and the warnings as strings, u64 entry count and each entry as string name, string
// instantiation. (Files of an earlier format, "M2VLIB01" and "M2VLIB02", are refused with a request to rebuild.)
// The checksum (64-bit FNV-1a of everything between the magic and the checksum) catches a file damaged after it
// was written.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "metal2vk/compiler.h"
#include "metal2vk/deferred_source.h"

namespace m2v {

struct LibraryContents {
  std::vector<CompiledKernel> kernels;
  std::vector<DeferredSource> sources;
};

// Reads a whole library file. Throws std::runtime_error naming the file and the problem: missing or unreadable, not
// a library file, truncated or damaged, or written by a different compiler version (its modules may not match this
// runtime's ABI: rebuild the library).
LibraryContents readLibrary(const std::string& path);
// Writes `contents` to `path` (through a temporary file and a rename, so a reader never sees half a file). Throws
// std::runtime_error naming the file when it cannot be written. Entry names (compiled kernels and deferred entries
// together) must be unique.
void writeLibrary(const std::string& path, const LibraryContents& contents);

// A library of compiled kernels only (the module cache's files): readLibrary's kernels, refusing a file that holds
// deferred sources; writeLibrary of the kernels alone.
std::vector<CompiledKernel> readLibraryFile(const std::string& path);
void writeLibraryFile(const std::string& path, const std::vector<CompiledKernel>& kernels);

// One kernel's record as the library file stores it; also usable on its own (a module cache entry).
void appendKernelRecord(std::string& out, const CompiledKernel& kernel);
// Decodes the record at `pos` of `bytes` and advances `pos` past it. Throws std::runtime_error naming the problem.
CompiledKernel readKernelRecord(std::string_view bytes, size_t& pos);

}  // namespace m2v
