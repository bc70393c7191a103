#pragma once
#include <ostream>

#include "engine.h"

namespace m2v::review {
void printMarkdown(const Review& r, std::ostream& out);
void printJson(const Review& r, std::ostream& out);
}  // namespace m2v::review
