// Diagnostics shared by every compiler stage, printed in clang's form against the user's original source.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

namespace m2v {

// Process exit codes (docs: README "Exit codes").
enum class Status : int {
  Ok = 0,
  UserError = 1,      // an error in the user's code
  UsageError = 2,     // bad command line
  Unsupported = 3,    // a construct metal2vk does not support yet
  InternalError = 4,  // a bug in metal2vk, including a module that fails validation
  DeviceError = 5,    // the GPU failed: timeout, device lost
};

enum class Severity { Note, Warning, Error, Unsupported, Internal };

struct Diagnostic {
  Severity severity = Severity::Error;
  std::string file;  // empty when there is no location
  uint32_t line = 0, column = 0;
  std::string message;
  std::string sourceLine;  // the original source line, for the caret display
};

class Diagnostics {
 public:
  void report(Diagnostic d);
  void error(std::string message) { report({Severity::Error, {}, 0, 0, std::move(message), {}}); }
  void unsupported(std::string message) { report({Severity::Unsupported, {}, 0, 0, std::move(message), {}}); }
  void internal(std::string message) { report({Severity::Internal, {}, 0, 0, std::move(message), {}}); }

  const std::vector<Diagnostic>& all() const { return diags_; }
  // Drops the diagnostics reported after the first `count` (and their effect on the status).
  void rollback(size_t count);
  bool hasErrors() const { return status_ != Status::Ok; }
  // The most serious failure reported so far, as an exit status.
  Status status() const { return status_; }
  // clang-style text: `file:line:col: error: message`, the source line and a caret.
  std::string format() const;
  static std::string format(const Diagnostic& d);

 private:
  std::vector<Diagnostic> diags_;
  Status status_ = Status::Ok;
};

}  // namespace m2v
