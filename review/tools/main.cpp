// Standalone driver: `m2v-review ARGS` behaves as `m2v review ARGS`.
#include <iostream>

#include "metal2vk/review.h"

int main(int argc, char** argv) {
  std::vector<std::string> args(argv + 1, argv + argc);
  return m2v::runReviewCli(args, std::cout, std::cerr);
}
