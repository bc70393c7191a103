// Rewrites OpDecorate SpecId literals of a SPIR-V module from glslang's small ids to the ABI's large ids
// (glslang rejects constant_id > 2047). Mapping: see runtime/CMakeLists.txt.
#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <vector>

static uint32_t remap(uint32_t id) {
  if (id >= 1000 && id < 1100) return 65536 + (id - 1000);
  if (id >= 1100 && id < 1106) return 131072 + (id - 1100);  // workgroup size, then the nominal threadgroup size
  if (id >= 1200 && id < 1300) return 131088 + (id - 1200);
  return id;
}

int main(int argc, char** argv) {
  if (argc != 3) {
    std::fprintf(stderr, "usage: %s in.spv out.spv\n", argv[0]);
    return 2;
  }
  std::ifstream in(argv[1], std::ios::binary);
  std::vector<char> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  if (bytes.size() % 4 || bytes.size() < 20) {
    std::fprintf(stderr, "%s: not a SPIR-V module\n", argv[1]);
    return 1;
  }
  std::vector<uint32_t> words(bytes.size() / 4);
  std::copy(bytes.begin(), bytes.end(), reinterpret_cast<char*>(words.data()));
  if (words[0] != 0x07230203u) {
    std::fprintf(stderr, "%s: bad SPIR-V magic\n", argv[1]);
    return 1;
  }
  constexpr uint32_t kOpDecorate = 71, kDecorationSpecId = 1;
  for (size_t i = 5; i < words.size();) {
    uint32_t count = words[i] >> 16, opcode = words[i] & 0xffff;
    if (count == 0 || i + count > words.size()) {
      std::fprintf(stderr, "%s: malformed instruction at word %zu\n", argv[1], i);
      return 1;
    }
    if (opcode == kOpDecorate && count == 4 && words[i + 2] == kDecorationSpecId) words[i + 3] = remap(words[i + 3]);
    i += count;
  }
  std::ofstream out(argv[2], std::ios::binary | std::ios::trunc);
  out.write(reinterpret_cast<const char*>(words.data()), std::streamsize(words.size() * 4));
  return out ? 0 : 1;
}
