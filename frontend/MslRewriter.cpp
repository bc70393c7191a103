#include "MslRewriter.h"

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>

namespace m2v::frontend {
namespace {

enum class TokKind { Identifier, Number, String, Punct };

struct Token {
  TokKind kind;
  size_t begin, end;  // byte range in the source
  std::string_view text;
};

bool isIdentStart(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// A small C++ lexer: enough to find identifiers, literals and punctuation; comments vanish. Preprocessor lines are
// lexed like code so that macro bodies are rewritten too.
std::vector<Token> lex(std::string_view s) {
  std::vector<Token> toks;
  size_t i = 0, n = s.size();
  auto push = [&](TokKind k, size_t b, size_t e) { toks.push_back({k, b, e, s.substr(b, e - b)}); };
  while (i < n) {
    char c = s[i];
    if (std::isspace(static_cast<unsigned char>(c)) || c == '\\') {
      ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '/') {
      while (i < n && s[i] != '\n') ++i;
    } else if (c == '/' && i + 1 < n && s[i + 1] == '*') {
      size_t e = s.find("*/", i + 2);
      i = e == std::string_view::npos ? n : e + 2;
    } else if (c == 'R' && i + 1 < n && s[i + 1] == '"') {  // raw string literal
      size_t open = s.find('(', i + 2);
      if (open == std::string_view::npos) {
        push(TokKind::Punct, i, i + 1);
        ++i;
        continue;
      }
      std::string delim = ")" + std::string(s.substr(i + 2, open - i - 2)) + "\"";
      size_t e = s.find(delim, open);
      size_t end = e == std::string_view::npos ? n : e + delim.size();
      push(TokKind::String, i, end);
      i = end;
    } else if (isIdentStart(c)) {
      size_t b = i;
      while (i < n && isIdentChar(s[i])) ++i;
      // Encoding prefixes of string literals (u8"..", L'..') belong to the literal.
      if (i < n && (s[i] == '"' || s[i] == '\'') &&
          (s.substr(b, i - b) == "u8" || s.substr(b, i - b) == "u" || s.substr(b, i - b) == "U" ||
           s.substr(b, i - b) == "L")) {
        char q = s[i++];
        while (i < n && s[i] != q && s[i] != '\n') i += (s[i] == '\\') ? 2 : 1;
        i = std::min(n, i + 1);
        push(TokKind::String, b, i);
      } else {
        push(TokKind::Identifier, b, i);
      }
    } else if (std::isdigit(static_cast<unsigned char>(c)) ||
               (c == '.' && i + 1 < n && std::isdigit(static_cast<unsigned char>(s[i + 1])))) {
      size_t b = i;
      while (i < n && (isIdentChar(s[i]) || s[i] == '.' || s[i] == '\'' ||
                       ((s[i] == '+' || s[i] == '-') &&
                        (s[i - 1] == 'e' || s[i - 1] == 'E' || s[i - 1] == 'p' || s[i - 1] == 'P'))))
        ++i;
      push(TokKind::Number, b, i);
    } else if (c == '"' || c == '\'') {
      size_t b = i++;
      while (i < n && s[i] != c && s[i] != '\n') i += (s[i] == '\\') ? 2 : 1;
      i = std::min(n, i + 1);
      push(TokKind::String, b, i);
    } else {
      // Two-character punctuators that matter here; everything else is one character.
      static constexpr std::array<std::string_view, 6> two = {"::", "->", "[[", "]]", "&&", "||"};
      size_t len = 1;
      for (std::string_view t : two)
        if (s.substr(i, 2) == t) len = 2;
      // `]]` is two tokens when it closes nested subscripts (a[b[i]]); the attribute scanner handles that case.
      push(TokKind::Punct, i, i + len);
      i += len;
    }
  }
  return toks;
}

constexpr std::array<std::string_view, 26> kBuiltinAttributes = {"dispatch_quadgroups_per_threadgroup",
                                                                 "dispatch_simdgroups_per_threadgroup",
                                                                 "dispatch_threads_per_threadgroup",
                                                                 "grid_origin",
                                                                 "grid_size",
                                                                 "quadgroup_index_in_threadgroup",
                                                                 "quadgroups_per_threadgroup",
                                                                 "simdgroup_index_in_threadgroup",
                                                                 "simdgroups_per_threadgroup",
                                                                 "thread_execution_width",
                                                                 "thread_index_in_quadgroup",
                                                                 "thread_index_in_simdgroup",
                                                                 "thread_index_in_threadgroup",
                                                                 "thread_position_in_grid",
                                                                 "thread_position_in_threadgroup",
                                                                 "threadgroup_position_in_grid",
                                                                 "threadgroups_per_grid",
                                                                 "threads_per_grid",
                                                                 "threads_per_simdgroup",
                                                                 "threads_per_threadgroup",
                                                                 "simdgroup_size",
                                                                 "quadgroup_size",
                                                                 "thread_index_in_grid",
                                                                 "dispatch_threads_per_grid",
                                                                 "threadgroups_per_grid_size",
                                                                 "thread_execution_width_in_grid"};

// Attributes that exist in Metal but not for compute kernels we can translate; kept so the compiler can name them.
constexpr std::array<std::string_view, 14> kUnsupportedAttributes = {
    "stage_in",           "texture",         "sampler", "id",   "user", "position", "vertex_id", "instance_id", "color",
    "raster_order_group", "imageblock_data", "payload", "mesh", "patch"};

bool isBuiltinAttribute(std::string_view n) {
  return std::find(kBuiltinAttributes.begin(), kBuiltinAttributes.end(), n) != kBuiltinAttributes.end();
}
bool isUnsupportedAttribute(std::string_view n) {
  return std::find(kUnsupportedAttributes.begin(), kUnsupportedAttributes.end(), n) != kUnsupportedAttributes.end();
}

class Rewriter {
 public:
  explicit Rewriter(std::string_view src) : src_(src), toks_(lex(src)) {}

  RewrittenSource run() {
    int braceDepth = 0, parenDepth = 0;
    for (size_t i = 0; i < toks_.size(); ++i) {
      const Token& t = toks_[i];
      if (t.kind == TokKind::Punct) {
        if (t.text == "{") ++braceDepth;
        if (t.text == "}") braceDepth = std::max(0, braceDepth - 1);
        if (t.text == "(") ++parenDepth;
        if (t.text == ")") parenDepth = std::max(0, parenDepth - 1);
        if (t.text == "[[") {
          if (auto end = rewriteAttributeList(i, parenDepth > 0)) i = *end;
        } else if (t.text == "[" && parenDepth > 0) {
          if (auto end = rewriteArrayParameter(i)) i = *end;
        }
        continue;
      }
      if (t.kind == TokKind::Number) {
        // Metal's half literals: 1.0h, 2h, 1e-3H.
        char last = t.text.back();
        bool hex = t.text.size() > 1 && (t.text[1] == 'x' || t.text[1] == 'X');
        if ((last == 'h' || last == 'H') && !hex)
          replace(t.begin, t.end, "((half)" + std::string(t.text.substr(0, t.text.size() - 1)) + ")");
        continue;
      }
      if (t.kind != TokKind::Identifier) continue;
      if (t.text == "kernel" && next(i, "void")) {
        replace(t.begin, t.end, "__attribute__((annotate(\"m2v.kernel\")))");
      } else if (t.text == "threadgroup" && braceDepth > 0 && parenDepth == 0 && startsStatement(i) &&
                 !declaresPointer(i + 1)) {
        // A static of class type in another address space cannot be default-constructed in C++; empty
        // aggregate initialization constructs nothing (threadgroup memory starts undefined anyway).
        replace(t.begin, t.begin, "static ");
        addEmptyInitializers(i + 1);
      } else if ((t.text == "device" || t.text == "constant" || t.text == "threadgroup" || t.text == "thread") &&
                 isMethodQualifier(i)) {
        replace(t.begin, t.end, std::string(t.end - t.begin, ' '));
      } else if (isMetalVectorTypeName(t.text) && next(i, "(") && !prev(i, ".") && !prev(i, "->")) {
        size_t b = t.begin;
        if (i >= 2 && toks_[i - 1].text == "::" && toks_[i - 2].text == "metal") b = toks_[i - 2].begin;
        replace(b, toks_[i + 1].end, "__m2v::vec_ctor<" + std::string(src_.substr(b, t.end - b)) + ">(");
        ++i;
      } else if ((t.text == "half" || t.text == "bfloat") && next(i, "(") && !prev(i, ".") && !prev(i, "->") &&
                 !prev(i, "::")) {
        // half <-> bfloat conversions, which C++ only allows through float.
        replace(t.begin, toks_[i + 1].end, "__m2v::scalar_cast<" + std::string(t.text) + ">(");
        ++i;
      } else if (t.text == "vec" && next(i, "<")) {
        size_t close = matchAngle(i + 1);
        if (close && close + 1 < toks_.size() && toks_[close + 1].text == "(" && !prev(i, "::")) {
          replace(t.begin, toks_[close + 1].end,
                  "__m2v::vec_ctor<" + std::string(src_.substr(t.begin, toks_[close].end - t.begin)) + ">(");
          i = close + 1;
        }
      } else if (t.text == "static_cast" && next(i, "<")) {
        size_t close = matchAngle(i + 1);
        if (!close || close + 1 >= toks_.size() || toks_[close + 1].text != "(") continue;
        std::string_view inner = src_.substr(toks_[i + 2].begin, toks_[close - 1].end - toks_[i + 2].begin);
        bool vectorTarget = (close == i + 3 && isMetalVectorTypeName(toks_[i + 2].text)) ||
                            (toks_[i + 2].text == "vec" && toks_[i + 3].text == "<");
        bool halfTarget = close == i + 3 && (toks_[i + 2].text == "half" || toks_[i + 2].text == "bfloat");
        if (vectorTarget || halfTarget) {
          replace(t.begin, toks_[close + 1].end,
                  std::string(vectorTarget ? "__m2v::vec_ctor<" : "__m2v::scalar_cast<") + std::string(inner) + ">(");
          i = close + 1;
        }
      }
    }
    return finish();
  }

 private:
  bool next(size_t i, std::string_view text) const { return i + 1 < toks_.size() && toks_[i + 1].text == text; }
  bool prev(size_t i, std::string_view text) const { return i > 0 && toks_[i - 1].text == text; }

  bool startsStatement(size_t i) const {
    if (i == 0) return true;
    std::string_view p = toks_[i - 1].text;
    return p == "{" || p == "}" || p == ";" || p == ":";
  }

  // After `threadgroup`: does the declaration declare a pointer or reference (which lives in thread memory)?
  bool declaresPointer(size_t i) const {
    int angle = 0;
    for (; i < toks_.size(); ++i) {
      std::string_view t = toks_[i].text;
      if (t == "<")
        ++angle;
      else if (t == ">")
        --angle;
      else if (angle <= 0 && (t == ";" || t == "=" || t == "[" || t == "(" || t == "," || t == "{"))
        return false;
      else if (angle <= 0 && (t == "*" || t == "&" || t == "&&"))
        return true;
    }
    return false;
  }

  // `f(constant int shape[4], ...)`: a parameter declared as an array in an address space is a pointer in Metal;
  // C++ rejects the address space on an array parameter, so write the pointer. `open` is the `[` after the name.
  std::optional<size_t> rewriteArrayParameter(size_t open) {
    if (open < 2 || toks_[open - 1].kind != TokKind::Identifier) return std::nullopt;
    std::string_view beforeName = toks_[open - 2].text;
    if (toks_[open - 2].kind != TokKind::Identifier && beforeName != ">") return std::nullopt;  // a type, not `f(x[3])`
    size_t close = open;
    while (close < toks_.size() && toks_[close].text != "]") ++close;
    if (close + 1 >= toks_.size()) return std::nullopt;
    std::string_view after = toks_[close + 1].text;
    if (after != "," && after != ")" && after != "[[") return std::nullopt;
    bool inAddressSpace = false;  // the parameter, back to its `(` or `,`, names an address space
    for (size_t k = open - 1; k > 0; --k) {
      std::string_view w = toks_[k - 1].text;
      if (w == "(" || w == "," || w == ";" || w == "{") break;
      inAddressSpace |= w == "device" || w == "constant" || w == "threadgroup";
    }
    if (!inAddressSpace) return std::nullopt;
    const Token& name = toks_[open - 1];
    replace(name.begin, toks_[close].end, "* " + std::string(name.text));
    return close;
  }

  // Inserts ` = {}` before each top-level `,` and the `;` of the declaration that starts at token `i`.
  void addEmptyInitializers(size_t i) {
    int depth = 0;
    for (; i < toks_.size(); ++i) {
      std::string_view t = toks_[i].text;
      if (t == "(" || t == "[" || t == "{" || t == "<")
        ++depth;
      else if (t == ")" || t == "]" || t == "}" || t == ">")
        --depth;
      else if (depth == 0 && t == "=")
        return;  // already initialized (not valid Metal; let clang say so)
      else if (depth == 0 && (t == "," || t == ";")) {
        replace(toks_[i].begin, toks_[i].begin, " = {}");
        if (t == ";") return;
      }
    }
  }

  // `void f() device {` / `T g(int) const threadgroup;` : an address-space qualifier on a method.
  bool isMethodQualifier(size_t i) const {
    size_t p = i;
    if (p > 0 && (toks_[p - 1].text == "const" || toks_[p - 1].text == "volatile")) --p;
    if (p == 0 || toks_[p - 1].text != ")") return false;
    if (i + 1 >= toks_.size()) return false;
    std::string_view n = toks_[i + 1].text;
    return n == "{" || n == ";" || n == "const" || n == "volatile" || n == "noexcept" || n == "->" || n == "=" ||
           n == "&" || n == "override";
  }

  size_t matchAngle(size_t open) const {
    int depth = 0;
    for (size_t j = open; j < toks_.size(); ++j) {
      std::string_view t = toks_[j].text;
      if (t == "<")
        ++depth;
      else if (t == ">") {
        if (--depth == 0) return j;
      } else if (t == ";" || t == "{" || t == "}")
        return 0;
    }
    return 0;
  }

  struct Attr {
    std::string_view name;
    size_t argBegin = 0, argEnd = 0;  // source range of the argument text, if any
    bool hasArgs = false;
  };

  // Parses `[[ a, b(args), ns::c ]]` starting at the `[[` token; returns the index of the closing token.
  std::optional<size_t> rewriteAttributeList(size_t open, bool inParens) {
    std::vector<Attr> attrs;
    size_t j = open + 1;
    bool anyForeign = false;
    while (j < toks_.size()) {
      if (toks_[j].text == "]]") break;
      if (toks_[j].text == "]" && j + 1 < toks_.size() && toks_[j + 1].text == "]") break;
      if (toks_[j].kind != TokKind::Identifier) return std::nullopt;  // not an attribute list (e.g. a[[b]] lambda)
      Attr a;
      a.name = toks_[j].text;
      ++j;
      if (j < toks_.size() && toks_[j].text == "::") {  // namespaced attribute: foreign to Metal
        anyForeign = true;
        j += 2;
        a.name = {};
      }
      if (j < toks_.size() && toks_[j].text == "(") {
        int depth = 0;
        size_t k = j;
        for (; k < toks_.size(); ++k) {
          if (toks_[k].text == "(") ++depth;
          if (toks_[k].text == ")" && --depth == 0) break;
        }
        if (k >= toks_.size()) return std::nullopt;
        a.hasArgs = true;
        a.argBegin = toks_[j].end;
        a.argEnd = toks_[k].begin;
        j = k + 1;
      }
      attrs.push_back(a);
      if (j < toks_.size() && toks_[j].text == ",") ++j;
    }
    if (j >= toks_.size()) return std::nullopt;
    size_t closeEnd = toks_[j].text == "]]" ? toks_[j].end : toks_[j + 1].end;
    size_t closeIdx = toks_[j].text == "]]" ? j : j + 1;

    std::vector<std::string> annotations;
    std::vector<std::string> kept;
    for (const Attr& a : attrs) {
      std::string arg = a.hasArgs ? std::string(src_.substr(a.argBegin, a.argEnd - a.argBegin)) : "";
      std::string n(a.name);
      if (n == "kernel") {
        annotations.push_back("annotate(\"m2v.kernel\")");
      } else if (n == "host_name" && a.hasArgs) {
        annotations.push_back("annotate(\"m2v.host_name\", " + arg + ")");
      } else if ((n == "buffer" || n == "threadgroup") && a.hasArgs) {
        annotations.push_back("annotate(\"m2v." + n + "\", " + arg + ")");
      } else if (n == "function_constant" && a.hasArgs) {
        if (inParens)  // on a parameter: the name of a bool function constant that guards it
          annotations.push_back("annotate(\"m2v.function_constant_ref\", \"" + trim(arg) + "\")");
        else
          annotations.push_back("annotate(\"m2v.function_constant\", " + arg + ")");
      } else if (n == "max_total_threads_per_threadgroup" && a.hasArgs) {
        annotations.push_back("annotate(\"m2v.max_total_threads_per_threadgroup\", " + arg + ")");
      } else if (isBuiltinAttribute(n)) {
        annotations.push_back("annotate(\"m2v.builtin\", \"" + n + "\")");
      } else if (isUnsupportedAttribute(n)) {
        annotations.push_back("annotate(\"m2v.unsupported_attribute\", \"" + n + "\")");
      } else {
        anyForeign = true;
        // A standard attribute (maybe_unused, likely, ...) stays as it is.
        std::string text = n;
        if (a.hasArgs) text += "(" + arg + ")";
        kept.push_back(text);
      }
    }
    if (annotations.empty()) return closeIdx;  // only standard attributes: leave the list alone
    std::string out = "__attribute__((";
    for (size_t k = 0; k < annotations.size(); ++k) out += (k ? ", " : "") + annotations[k];
    out += "))";
    if (anyForeign && !kept.empty()) {
      out += " [[";
      for (size_t k = 0; k < kept.size(); ++k) out += (k ? ", " : "") + kept[k];
      out += "]]";
    }
    // Keep the line structure: one newline in the replacement for each one the attribute list spanned.
    size_t newlines = std::count(src_.begin() + toks_[open].begin, src_.begin() + closeEnd, '\n');
    out.append(newlines, '\n');
    replace(toks_[open].begin, closeEnd, out);
    return closeIdx;
  }

  static std::string trim(std::string s) {
    while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back()))) s.pop_back();
    size_t b = 0;
    while (b < s.size() && std::isspace(static_cast<unsigned char>(s[b]))) ++b;
    return s.substr(b);
  }

  void replace(size_t begin, size_t end, std::string text) { pending_.push_back({begin, end, std::move(text)}); }

  RewrittenSource finish() {
    std::stable_sort(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) { return a.begin < b.begin; });
    RewrittenSource out;
    size_t pos = 0;
    for (const PendingEdit& e : pending_) {
      if (e.begin < pos) continue;  // overlapping edits cannot happen by construction; be safe
      out.text.append(src_.substr(pos, e.begin - pos));
      size_t rb = out.text.size();
      out.text += e.text;
      out.edits.push_back({rb, out.text.size(), e.begin, e.end});
      pos = e.end;
    }
    out.text.append(src_.substr(pos));
    return out;
  }

  struct PendingEdit {
    size_t begin, end;
    std::string text;
  };
  std::string_view src_;
  std::vector<Token> toks_;
  std::vector<PendingEdit> pending_;
};

}  // namespace

bool isMetalVectorTypeName(std::string_view name) {
  static constexpr std::array<std::string_view, 13> scalars = {
      "bool", "char", "uchar", "short", "ushort", "int", "uint", "long", "ulong", "half", "bfloat", "float", "double"};
  if (name.size() < 2) return false;
  char last = name.back();
  if (last != '2' && last != '3' && last != '4') return false;
  std::string_view base = name.substr(0, name.size() - 1);
  return std::find(scalars.begin(), scalars.end(), base) != scalars.end();
}

size_t RewrittenSource::originalOffset(size_t off) const {
  // Find the last edit that starts at or before `off`.
  auto it =
      std::upper_bound(edits.begin(), edits.end(), off, [](size_t o, const Edit& e) { return o < e.rewrittenBegin; });
  if (it == edits.begin()) return off;
  const Edit& e = *std::prev(it);
  if (off < e.rewrittenEnd) return e.originalBegin;
  return off - e.rewrittenEnd + e.originalEnd;
}

RewrittenSource rewriteMetalSource(std::string_view source) { return Rewriter(source).run(); }

}  // namespace m2v::frontend
