// A small SHA-256 for content-addressed cache keys (FIPS 180-4).
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

namespace m2v::mlx {

class Sha256 {
 public:
  Sha256();
  void update(std::string_view data);
  // Updates with the length first, so that consecutive fields cannot run into each other.
  void field(std::string_view data);
  std::string hex();  // finishes the hash

 private:
  void block(const uint8_t* p);
  uint32_t h_[8];
  uint8_t buf_[64];
  size_t used_ = 0;
  uint64_t total_ = 0;
};

}  // namespace m2v::mlx
