// Deferred sources (include/metal2vk/deferred_source.h): the split of preprocessed text into a body and its
// [[host_name]] explicit instantiations.
#include "metal2vk/deferred_source.h"

#include <cctype>

#include "Frontend.h"

namespace m2v {

namespace {

bool isIdentifierChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Scans C++ text that the preprocessor has already expanded: skips literals, comments and preprocessor lines, and
// tells the caller about identifiers and brackets.
class Scanner {
 public:
  explicit Scanner(std::string_view text) : text_(text) {}

  size_t pos = 0;
  bool atEnd() const { return pos >= text_.size(); }
  char peek(size_t ahead = 0) const { return pos + ahead < text_.size() ? text_[pos + ahead] : '\0'; }

  // Moves past whitespace, comments, preprocessor lines and literals; stops at anything else.
  void skipTrivia() {
    while (!atEnd()) {
      char c = peek();
      if (c == '\n') {
        lineStart_ = true;
        ++pos;
      } else if (std::isspace(static_cast<unsigned char>(c))) {
        ++pos;
      } else if (c == '#' && lineStart_) {
        skipLine();
      } else if (c == '/' && peek(1) == '/') {
        skipLine();
      } else if (c == '/' && peek(1) == '*') {
        size_t end = text_.find("*/", pos + 2);
        pos = end == std::string_view::npos ? text_.size() : end + 2;
      } else if (c == '"' || (c == '\'' && (pos == 0 || !isIdentifierChar(text_[pos - 1])))) {
        skipLiteral(c);
        lineStart_ = false;
      } else {
        return;
      }
    }
  }

  std::string_view identifier() {
    size_t begin = pos;
    while (!atEnd() && isIdentifierChar(peek())) ++pos;
    lineStart_ = false;
    return text_.substr(begin, pos - begin);
  }

  void advance() {
    ++pos;
    lineStart_ = false;
  }

 private:
  void skipLine() {
    while (!atEnd() && peek() != '\n') {
      if (peek() == '\\' && peek(1) == '\n') ++pos;
      ++pos;
    }
  }
  void skipLiteral(char quote) {
    ++pos;
    while (!atEnd() && peek() != quote && peek() != '\n') pos += peek() == '\\' ? 2 : 1;
    if (!atEnd() && peek() == quote) ++pos;
  }

  std::string_view text_;
  bool lineStart_ = true;
};

// The [[host_name("NAME")]] of an explicit instantiation's text, its adjacent string literals joined (MLX's macros
// spell names as `"affine_qmv_" "float" "_gs_" "64"`); empty when it has none.
std::string hostName(std::string_view text) {
  size_t at = text.find("host_name");
  if (at == std::string_view::npos) return {};
  size_t i = text.find_first_not_of(" \t\n", at + 9);
  if (i == std::string_view::npos || text[i] != '(') return {};
  std::string name;
  for (i = text.find_first_not_of(" \t\n", i + 1); i < text.size() && text[i] == '"';
       i = text.find_first_not_of(" \t\n", i + 1)) {
    for (++i; i < text.size() && text[i] != '"'; ++i) {
      if (text[i] == '\\' && i + 1 < text.size()) ++i;
      name += text[i];
    }
  }
  return i < text.size() && text[i] == ')' ? name : std::string();
}

}  // namespace

DeferredSource splitInstantiations(std::string_view text, std::string name) {
  DeferredSource out;
  out.name = std::move(name);
  // Each open brace: the namespace it opens ("" for an anonymous one), or none for any other brace.
  struct Brace {
    bool isNamespace = false;
    std::string name;
  };
  std::vector<Brace> braces;
  bool namespaceHead = false;  // between `namespace [NAME]` and its `{`
  std::string namespaceName;
  size_t copied = 0;  // text before this offset is in the body (or was an instantiation)
  Scanner s(text);
  auto inNamespacesOnly = [&] {
    for (const Brace& b : braces)
      if (!b.isNamespace) return false;
    return true;
  };
  while (true) {
    s.skipTrivia();
    if (s.atEnd()) break;
    char c = s.peek();
    if (isIdentifierChar(c)) {
      size_t begin = s.pos;
      std::string_view word = s.identifier();
      if (namespaceHead && !std::isdigit(static_cast<unsigned char>(word[0]))) {
        if (namespaceName.empty() || namespaceName.back() != ':')
          namespaceName.clear();  // a name, or what follows `a::`
        namespaceName += word;
      } else if (word == "namespace") {
        namespaceHead = true;
        namespaceName.clear();
      } else if (word == "template" && inNamespacesOnly()) {
        s.skipTrivia();
        if (s.peek() != '[' || s.peek(1) != '[') continue;
        // An explicit instantiation with attributes: up to its `;` outside brackets.
        int depth = 0;
        while (!s.atEnd() && !(depth == 0 && s.peek() == ';')) {
          char d = s.peek();
          if (d == '(' || d == '[' || d == '{') ++depth;
          if (d == ')' || d == ']' || d == '}') --depth;
          s.advance();
          s.skipTrivia();
        }
        if (s.atEnd()) break;
        s.advance();  // the ';'
        std::string_view instantiation = text.substr(begin, s.pos - begin);
        std::string entry = hostName(instantiation);
        if (entry.empty()) continue;  // no host name: not an entry point, stays in the body
        out.body.append(text.substr(copied, begin - copied));
        for (char ch : instantiation)
          if (ch == '\n') out.body += '\n';
        copied = s.pos;
        std::string wrapped(instantiation);
        for (auto b = braces.rbegin(); b != braces.rend(); ++b)
          wrapped = "namespace " + b->name + " { " + wrapped + " }";
        out.entries.push_back({std::move(entry), std::move(wrapped)});
      }
      continue;
    }
    if (c == '{') {
      braces.push_back({namespaceHead, namespaceHead ? namespaceName : std::string()});
      namespaceHead = false;
    } else if (c == '}') {
      if (!braces.empty()) braces.pop_back();
    } else if (c == ':' && namespaceHead) {
      namespaceName += ':';  // `namespace a::b {`
    } else if (c == ';' || c == '(' || c == '=') {
      namespaceHead = false;  // `using namespace x;`, `namespace a = b;`
    }
    s.advance();
  }
  out.body.append(text.substr(copied));
  return out;
}

std::optional<DeferredFile> deferFile(const std::string& path, const CompileOptions& options) {
  std::optional<std::string> text = frontend::preprocessForDeferral(path, options);
  if (!text) return std::nullopt;
  DeferredFile file{splitInstantiations(*text, path), {}};
  DeferredSource& source = file.source;
  source.fastMath = options.fastMath;
  source.cooperativeMatrix = options.cooperativeMatrix;
  source.nativeBfloat16 = options.nativeBfloat16;
  source.abortChecks = options.abortChecks;
  source.metalVersion = options.metalVersion;
  source.warnings = options.warnings;
  CompileOptions bodyOptions = options;  // the body is preprocessed: its includes and macros are applied
  bodyOptions.includeDirs.clear();
  bodyOptions.defines.clear();
  file.body = compileSource(source.body, path, bodyOptions);
  if (!source.entries.empty() && file.body.kernels.empty()) {
    // The compiler's "no kernel entry points" warning is untrue of a file whose entry points are all deferred.
    Diagnostics kept;
    for (const Diagnostic& d : file.body.diagnostics.all())
      if (d.message != "no kernel entry points found") kept.report(d);
    file.body.diagnostics = std::move(kept);
  }
  return file;
}

std::string DeferredSource::sourceFor(const DeferredEntry& entry) const {
  return body + "\n#line 1 \"" + name + " (instantiation of " + entry.name + ")\"\n" + entry.instantiation + "\n";
}

CompileOptions DeferredSource::optionsFor(const DeferredEntry& entry) const {
  CompileOptions options;
  options.entries = {entry.name};
  options.fastMath = fastMath;
  options.cooperativeMatrix = cooperativeMatrix;
  options.nativeBfloat16 = nativeBfloat16;
  options.abortChecks = abortChecks;
  options.metalVersion = metalVersion;
  options.warnings = warnings;
  return options;
}

}  // namespace m2v
