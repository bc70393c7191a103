// Library files: many compiled kernels in one file, the metal2vk counterpart of a .metallib. `m2v metal -c` writes
// one per .metal file (MLX's build names them .air), `m2v metallib` merges them into one (MLX's mlx.metallib), and
// the Metal API's newLibrary(URL) reads it.
//
// Layout (little-endian):
//   "M2VLIB02" | u64 length, compilerVersion() of the writer | u64 kernel count | kernel records | u64 checksum
// A kernel record is u64 variant bits (1: a cooperative-matrix build follows, 2: a native-bfloat16 build follows),
// then the portable module and the variants in that order, each as u64 JSON bytes, the reflection JSON, u64 SPIR-V
// word count and the words. ("M2VLIB01" records had a module count, 1 or 2, instead: such files are refused with
// a request to rebuild.) The checksum (64-bit FNV-1a of everything between the
// magic and the checksum) catches a file damaged after it was written.
#pragma once

#include <cstddef>
#include <string>
#include <string_view>
#include <vector>

#include "metal2vk/compiler.h"

namespace m2v {

// Reads every kernel of a library file. Throws std::runtime_error naming the file and the problem: missing or
// unreadable, not a library file, truncated or damaged, or written by a different compiler version (its modules
// may not match this runtime's ABI: rebuild the library).
std::vector<CompiledKernel> readLibraryFile(const std::string& path);

// Writes the kernels to `path` (replacing it through a temporary file and a rename, so a reader never sees half a
// file). Throws std::runtime_error naming the file when it cannot be written. Entry names must be unique.
void writeLibraryFile(const std::string& path, const std::vector<CompiledKernel>& kernels);

// One kernel's record as the library file stores it; also usable on its own (a module cache entry).
void appendKernelRecord(std::string& out, const CompiledKernel& kernel);
// Decodes the record at `pos` of `bytes` and advances `pos` past it. Throws std::runtime_error naming the problem.
CompiledKernel readKernelRecord(std::string_view bytes, size_t& pos);

}  // namespace m2v
