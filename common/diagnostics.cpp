#include "metal2vk/diagnostics.h"

#include <algorithm>

namespace m2v {

static Status statusOf(Severity s) {
  switch (s) {
    case Severity::Note:
    case Severity::Warning:
      return Status::Ok;
    case Severity::Error:
      return Status::UserError;
    case Severity::Unsupported:
      return Status::Unsupported;
    case Severity::Internal:
      return Status::InternalError;
  }
  return Status::InternalError;
}

void Diagnostics::report(Diagnostic d) {
  Status s = statusOf(d.severity);
  // Internal beats unsupported beats user error: the exit code names the most serious problem.
  if (static_cast<int>(s) > static_cast<int>(status_)) status_ = s;
  diags_.push_back(std::move(d));
}

void Diagnostics::rollback(size_t count) {
  if (count >= diags_.size()) return;
  diags_.resize(count);
  status_ = Status::Ok;
  for (const Diagnostic& d : diags_)
    if (static_cast<int>(statusOf(d.severity)) > static_cast<int>(status_)) status_ = statusOf(d.severity);
}

std::string Diagnostics::format(const Diagnostic& d) {
  static const char* names[] = {"note", "warning", "error", "error: unsupported", "internal error"};
  std::string out;
  if (!d.file.empty()) {
    out += d.file + ":" + std::to_string(d.line) + ":" + std::to_string(d.column) + ": ";
  }
  out += names[static_cast<int>(d.severity)];
  out += ": " + d.message + "\n";
  if (!d.sourceLine.empty()) {
    out += d.sourceLine + "\n";
    std::string caret;
    for (uint32_t i = 1; i < d.column && i <= d.sourceLine.size(); ++i)
      caret += d.sourceLine[i - 1] == '\t' ? '\t' : ' ';
    out += caret + "^\n";
  }
  return out;
}

std::string Diagnostics::format() const {
  std::string out;
  for (const Diagnostic& d : diags_) out += format(d);
  return out;
}

}  // namespace m2v
