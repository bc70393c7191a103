#include "MslRewriter.h"

#include <clang/Basic/LangOptions.h>
#include <clang/Lex/Lexer.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <optional>
#include <set>

namespace m2v::frontend {
namespace {

enum class TokKind { Identifier, Number, String, Punct };

struct Token {
  TokKind kind;
  size_t begin, end;  // byte range in the source
  std::string_view text;
};

bool isIdentChar(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// The tokens of a file, from clang's own lexer in raw mode (no preprocessor: directives and macro bodies are lexed
// like code, so that they are rewritten too; comments vanish; line splices, raw strings, encoding prefixes, digit
// separators and pp-numbers such as Metal's `1.0h` are clang's business). Two refinements keep the rules simple:
// punctuators other than `::`, `->`, `&&` and `||` are one character each (`>>` closes two template argument
// lists), and `[[` and `]]` written without a space are single tokens (an attribute list's brackets; the bracket
// table below also reads `]]` as the end of two subscripts).
std::vector<Token> lex(std::string_view s) {
  std::vector<Token> toks;
  if (s.empty()) return toks;
  clang::LangOptions lang;
  lang.CPlusPlus = lang.CPlusPlus11 = lang.CPlusPlus14 = lang.CPlusPlus17 = true;
  lang.LineComment = true;
  lang.Bool = true;
  lang.Digraphs = false;
  lang.DollarIdents = false;
  clang::Lexer lexer(clang::SourceLocation(), lang, s.data(), s.data(), s.data() + s.size());
  lexer.SetCommentRetentionState(false);
  auto push = [&](TokKind k, size_t b, size_t e) { toks.push_back({k, b, e, s.substr(b, e - b)}); };
  clang::Token t;
  while (true) {
    lexer.LexFromRawLexer(t);
    if (t.is(clang::tok::eof)) break;
    size_t end = static_cast<size_t>(lexer.getBufferLocation() - s.data());
    size_t begin = end - t.getLength();
    // a token after a line splice starts, for clang, at the splice's backslash
    while (begin < end && s[begin] == '\\') {
      size_t k = begin + 1;
      while (k < end && (s[k] == ' ' || s[k] == '\t' || s[k] == '\r')) ++k;
      if (k >= end || s[k] != '\n') break;
      begin = k + 1;
    }
    if (t.is(clang::tok::raw_identifier)) {
      push(TokKind::Identifier, begin, end);
    } else if (t.is(clang::tok::numeric_constant)) {
      push(TokKind::Number, begin, end);
    } else if (clang::tok::isStringLiteral(t.getKind()) ||
               t.isOneOf(clang::tok::char_constant, clang::tok::wide_char_constant, clang::tok::utf8_char_constant,
                         clang::tok::utf16_char_constant, clang::tok::utf32_char_constant)) {
      push(TokKind::String, begin, end);
    } else if (t.is(clang::tok::unknown) &&
               s.substr(begin, end - begin).find_first_not_of("\\ \t\r\n") == std::string_view::npos) {
      // a stray backslash (a line splice clang did not take): nothing
    } else {
      static constexpr std::array<std::string_view, 4> kept = {"::", "->", "&&", "||"};
      for (size_t i = begin; i < end;) {
        size_t len = 1;
        for (std::string_view k : kept)
          if (s.substr(i, 2) == k && i + 2 <= end) len = 2;
        push(TokKind::Punct, i, i + len);
        i += len;
      }
    }
  }
  // `[[` and `]]` with nothing between the brackets
  std::vector<Token> out;
  out.reserve(toks.size());
  for (size_t k = 0; k < toks.size(); ++k) {
    const Token& a = toks[k];
    if (k + 1 < toks.size() && a.kind == TokKind::Punct && (a.text == "[" || a.text == "]") &&
        toks[k + 1].text == a.text && toks[k + 1].begin == a.end) {
      out.push_back({TokKind::Punct, a.begin, a.end + 1, s.substr(a.begin, 2)});
      ++k;
      continue;
    }
    out.push_back(a);
  }
  return out;
}

// The bracket matcher, the one every rule uses: for each `(`, `[`, `{`, `[[` the index of its closing token and for
// each closer its opener (npos where unbalanced: a stray closer in a macro body matches nothing). A `]]` that closes
// two subscripts (`a[b[i]]`) is the partner of both `[`; the `]]` itself points at the outer one (a walk back over
// it skips the whole group).
//
// Angle brackets are paired in the same pass: without types, `<` may be a less-than, so each `<` is paired with the
// first `>` after it at the same bracket depth that brings the count of `<` and `>` there back to zero, within one
// statement (a `;`, `{` or `}` ends every open `<`, a closing bracket those opened inside it); a `<` without such a
// `>` has none, and a `>` inside parentheses (`vec<T, (N > 2 ? 4 : 2)>`) closes nothing outside them. This is what the
// rules that need the end of a template argument list ask (`vec<T, 2>(...)`, `static_cast<T>(...)`, the declarations
// they scan).
std::vector<size_t> matchBrackets(const std::vector<Token>& toks) {
  std::vector<size_t> partner(toks.size(), std::string_view::npos);
  std::vector<size_t> open;
  std::vector<std::pair<size_t, size_t>> angles;  // each open `<` and the bracket depth it is at
  auto closes = [](std::string_view o, std::string_view c) {
    return (o == "(" && c == ")") || (o == "[" && (c == "]" || c == "]]")) || (o == "{" && c == "}") ||
           (o == "[[" && c == "]]");
  };
  for (size_t k = 0; k < toks.size(); ++k) {
    if (toks[k].kind != TokKind::Punct) continue;
    std::string_view t = toks[k].text;
    if (t == "<") {
      angles.push_back({k, open.size()});
    } else if (t == ">" && !angles.empty() && angles.back().second == open.size()) {
      partner[angles.back().first] = k;
      partner[k] = angles.back().first;
      angles.pop_back();
    } else if (t == ";" || t == "{" || t == "}") {
      angles.clear();
    }
    if (t == "(" || t == "[" || t == "{" || t == "[[") {
      open.push_back(k);
    } else if (t == ")" || t == "]" || t == "}" || t == "]]") {
      // an unbalanced closer (a stray one in a macro body) pops nothing it does not match
      if (open.empty() || !closes(toks[open.back()].text, t)) continue;
      partner[open.back()] = k;
      partner[k] = open.back();
      open.pop_back();
      if (t == "]]" && toks[partner[k]].text == "[" && !open.empty() && toks[open.back()].text == "[") {
        partner[open.back()] = k;
        partner[k] = open.back();
        open.pop_back();
      }
      while (!angles.empty() && angles.back().second > open.size()) angles.pop_back();
    }
  }
  return partner;
}

// C++ spellings of types that `static_cast` handles as Metal does (no rewrite needed).
bool isBuiltinTypeKeyword(std::string_view n) {
  static constexpr std::array<std::string_view, 22> names = {
      "bool",     "char",    "uchar",    "short",   "ushort",   "int",     "uint",    "long",
      "ulong",    "float",   "double",   "void",    "size_t",   "int8_t",  "uint8_t", "int16_t",
      "uint16_t", "int32_t", "uint32_t", "int64_t", "uint64_t", "unsigned"};
  return std::find(names.begin(), names.end(), n) != names.end();
}

class Rewriter {
 public:
  Rewriter(std::string_view src, RewriteContext& context, std::string_view path = {})
      : src_(src), toks_(lex(src)), partner_(matchBrackets(toks_)), context_(context) {
    if (auto it = context.boolSwizzles.find(path); it != context.boolSwizzles.end()) boolSwizzles_ = &it->second;
  }

  void collect() { collectVectorAliases(); }

  RewrittenSource run() {
    collect();
    int braceDepth = 0, parenDepth = 0;
    for (size_t i = 0; i < toks_.size(); ++i) {
      const Token& t = toks_[i];
      if (t.kind == TokKind::Punct) {
        if (t.text == "{") {
          ++braceDepth;
          codeScopes_.push_back(inCode() || opensFunctionBody(i));
          scopes_.push_back(i);
        }
        if (t.text == "}") {
          braceDepth = std::max(0, braceDepth - 1);
          if (!scopes_.empty()) scopes_.pop_back();
          if (!codeScopes_.empty()) codeScopes_.pop_back();
        }
        if (t.text == "(") ++parenDepth;
        if (t.text == ")") parenDepth = std::max(0, parenDepth - 1);
        if (t.text == "(" && isCStyleCast(i)) {
          rewriteCStyleCast(i);
        } else if (t.text == "?") {
          wrapConditionalOperands(i);
        } else if (t.text == "{" && parenDepth > 0 && i > 0 && (toks_[i - 1].text == "(" || toks_[i - 1].text == ",")) {
          rewriteBracedArgument(i);
        } else if (t.text == "[[") {
          if (auto end = rewriteAttributeNames(i)) i = *end;
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
      if (boolSwizzles_ && boolSwizzles_->count(t.begin) && prev(i, ".")) {
        rewriteBoolSwizzle(i);
        continue;
      }
      if (t.text == "kernel" && isKernelKeyword(i)) {
        replace(t.begin, t.end, "__attribute__((annotate(\"m2v.kernel\")))");
      } else if ((t.text == "vertex" || t.text == "fragment") && isKernelKeyword(i)) {
        // the render stages' function qualifiers: declared, not compiled (ClangFrontend.cpp skips their bodies)
        replace(t.begin, t.end, "__attribute__((annotate(\"m2v.render_stage\", \"" + std::string(t.text) + "\")))");
      } else if (t.text == "threadgroup" && braceDepth > 0 && parenDepth == 0 && startsStatement(i) &&
                 !declaresPointer(i + 1)) {
        // A static of class type in another address space cannot be default-constructed in C++; empty
        // aggregate initialization constructs nothing (threadgroup memory starts undefined anyway).
        replace(t.begin, t.begin, "static ");
        addEmptyInitializers(i + 1);
      } else if ((t.text == "device" || t.text == "constant" || t.text == "threadgroup" || t.text == "thread") &&
                 isMethodQualifier(i)) {
        if (auto end = removeAddressSpaceOverload(i)) {
          i = *end;
          continue;
        }
        replace(t.begin, t.end, std::string(t.end - t.begin, ' '));
      } else if (t.text == "coherent" && next(i, "(") && i + 3 < toks_.size() && toks_[i + 3].text == ")") {
        // Metal 3.2's `coherent(device|system)`: writes become visible across threadgroups (or to the host) without
        // a barrier; a volatile access is the closest C++ has.
        replace(t.begin, toks_[i + 3].end,
                prev(i, "volatile") ? std::string(toks_[i + 3].end - t.begin, ' ') : std::string("volatile"));
        i += 3;
      } else if (isVectorType(t.text) && braceDepth > 0 && i + 2 < toks_.size() &&
                 toks_[i + 1].kind == TokKind::Identifier && toks_[i + 2].text == "(" && inCode() && !prev(i, ".") &&
                 !prev(i, "->") && !prev(i, "::")) {
        // `int2 offsets(0, row);` in a function body: a vector variable initialized by a constructor
        std::string_view type = src_.substr(t.begin, t.end - t.begin);
        replace(toks_[i + 2].begin, toks_[i + 2].end, " = __m2v::vec_ctor<" + std::string(type) + ">(");
        i += 2;
        ++parenDepth;
      } else if (isVectorType(t.text) && next(i, "(") && !prev(i, ".") && !prev(i, "->") && !prev(i, "operator") &&
                 !prev(i, "using") && !prev(i, "typedef")) {
        size_t b = t.begin;
        if (i >= 2 && toks_[i - 1].text == "::" && toks_[i - 2].text == "metal") b = toks_[i - 2].begin;
        replace(b, toks_[i + 1].end, "__m2v::vec_ctor<" + std::string(src_.substr(b, t.end - b)) + ">(");
        ++i;
      } else if ((t.text == "half" || t.text == "bfloat") && next(i, "(") && !prev(i, ".") && !prev(i, "->") &&
                 !prev(i, "::") && !prev(i, "operator")) {
        // half <-> bfloat conversions, which C++ only allows through float.
        replace(t.begin, toks_[i + 1].end, "__m2v::scalar_cast<" + std::string(t.text) + ">(");
        ++i;
      } else if (t.text == "vec" && next(i, "<")) {
        size_t close = matchAngle(i + 1);
        bool metalQualified = i >= 2 && toks_[i - 1].text == "::" && toks_[i - 2].text == "metal";
        if (close && close + 1 < toks_.size() && toks_[close + 1].text == "(" && (!prev(i, "::") || metalQualified) &&
            !prev(i, "operator")) {
          size_t b = metalQualified ? toks_[i - 2].begin : t.begin;
          replace(b, toks_[close + 1].end,
                  "__m2v::vec_ctor<" + std::string(src_.substr(b, toks_[close].end - b)) + ">(");
          i = close + 1;
        }
      } else if (t.text == "static_cast" && next(i, "<")) {
        size_t close = matchAngle(i + 1);
        if (!close || close + 1 >= toks_.size() || toks_[close + 1].text != "(") continue;
        std::string_view inner = src_.substr(toks_[i + 2].begin, toks_[close - 1].end - toks_[i + 2].begin);
        bool vectorTarget = (close == i + 3 && isMetalVectorTypeName(toks_[i + 2].text)) ||
                            (toks_[i + 2].text == "vec" && toks_[i + 3].text == "<");
        bool halfTarget = close == i + 3 && (toks_[i + 2].text == "half" || toks_[i + 2].text == "bfloat");
        // A single name that is no C++ type keyword may be a template parameter standing for half, bfloat or a
        // vector: Metal converts those where C++ rejects or bit-casts.
        bool nameTarget =
            close == i + 3 && toks_[i + 2].kind == TokKind::Identifier && !isBuiltinTypeKeyword(toks_[i + 2].text);
        if (vectorTarget || halfTarget || nameTarget) {
          const char* helper = vectorTarget ? "__m2v::vec_ctor<"
                               : halfTarget ? "__m2v::scalar_cast<"
                                            : "__m2v::static_cast_<";
          replace(t.begin, toks_[close + 1].end, std::string(helper) + std::string(inner) + ">(");
          i = close + 1;
        }
      }
    }
    return finish();
  }

 private:
  // Inside a function body (statements), as opposed to a namespace or class body.
  bool inCode() const { return !codeScopes_.empty() && codeScopes_.back(); }
  // `{` after a parameter list and its qualifiers, or after a constructor's member initializers.
  bool opensFunctionBody(size_t open) const {
    size_t k = open;
    while (k > 0) {
      std::string_view w = toks_[k - 1].text;
      if (w == "const" || w == "noexcept" || w == "mutable" || w == "override" || w == "final" || isAddressSpace(w) ||
          w == "volatile")
        --k;
      else
        break;
    }
    if (k == 0) return false;
    std::string_view w = toks_[k - 1].text;
    if (w == ")") return true;
    // `: a(x), b{y} {`: the last initializer closes with `)` (handled above) or `}`
    return false;
  }

  // `c ? a : b` -> `c ? __m2v::value(a) : __m2v::value(b)` (see __m2v/casts.h), except where the conditional is a
  // statement of its own (its operands may be void calls).
  void wrapConditionalOperands(size_t q) {
    // the start of the first operand: at depth 0, back to `;`, `{`, `}` (a statement) or anything else that
    // starts an expression
    bool statement = false;
    for (size_t k = q; k > 0; --k) {
      std::string_view w = toks_[k - 1].text;
      if ((w == ")" || w == "]" || w == "]]") && partner(k - 1) != std::string_view::npos) {
        k = partner(k - 1) + 1;  // over the whole group
        continue;
      }
      if (w == "(" || w == "[") break;
      if (w == ";" || w == "{" || w == "}") {
        statement = true;
        break;
      }
      if (w == "=" || w == "return" || w == "," || w == "?" || w == ":" || w == "+=" || w == "-=") break;
    }
    if (statement) return;
    // the second operand runs to the matching `:`; the third to the end of the conditional
    std::optional<size_t> colon = conditionalOperandEnd(q + 1, true);
    if (!colon || *colon == q + 1) return;
    std::optional<size_t> end = conditionalOperandEnd(*colon + 1, false);
    if (!end || *end == *colon + 1) return;
    wrapValue(q + 1, *colon - 1);
    wrapValue(*colon + 1, *end - 1);
  }

  // The token after a conditional's operand that starts at `from`: the matching `:` of the second operand; for the
  // third, the `)`, `]`, `}`, `;`, `,` or `:` that ends the conditional. None when the operand is not a plain one
  // (the second crosses a bracket or `;`; a `>` closes what may be a template argument list).
  std::optional<size_t> conditionalOperandEnd(size_t from, bool second) const {
    int nested = 0;
    for (size_t k = from; k < toks_.size(); ++k) {
      std::string_view w = toks_[k].text;
      if ((w == "(" || w == "[" || w == "{" || w == "[[" || w == "<") && partner(k) != std::string_view::npos) {
        k = partner(k);  // over the whole group (a template argument list: its commas are not the operand's end)
        continue;
      }
      if (w == "(" || w == "[" || w == "{") return std::nullopt;  // unbalanced
      if (w == ")" || w == "]" || w == "]]" || w == "}") return second ? std::nullopt : std::optional<size_t>(k);
      if (w == ">") return std::nullopt;
      if (w == ";") return second ? std::nullopt : std::optional<size_t>(k);
      if (!second && w == ",") return k;
      if (w == "?") ++nested;
      if (w == ":") {
        if (nested == 0) return k;
        --nested;
      }
    }
    return std::nullopt;
  }

  void wrapValue(size_t first, size_t last) {
    if (first == last && toks_[first].kind == TokKind::Number) return;  // a literal is a value already
    replace(toks_[first].begin, toks_[first].begin, "__m2v::value(");
    replace(toks_[last].end, toks_[last].end, ")");
  }

  // `EXPR.xy` (EXPR a bool vector) -> `__m2v::swizzle<0, 1>(EXPR)`, a value. `name` is the component name's token.
  void rewriteBoolSwizzle(size_t name) {
    std::string indices;
    for (char c : toks_[name].text) {
      size_t k = std::string_view("xyzw").find(c);
      if (k == std::string_view::npos) k = std::string_view("rgba").find(c);
      if (k == std::string_view::npos) return;  // not a component name: leave clang's error
      indices += (indices.empty() ? "" : ", ") + std::to_string(k);
    }
    // the postfix expression before the `.`: names, `::`, `.`, `->`, calls and subscripts, or a parenthesized one
    size_t k = name - 1;
    while (k > 0) {
      std::string_view w = toks_[k - 1].text;
      if (w == ")" || w == "]") {
        size_t j = partner(k - 1);
        if (j == std::string_view::npos) return;
        k = j;
        if (k > 0 && (toks_[k - 1].kind == TokKind::Identifier || toks_[k - 1].text == "]" ||
                      toks_[k - 1].text == ")" || toks_[k - 1].text == ">"))
          continue;  // a call or subscript: its callee or array comes first
        break;
      }
      if (toks_[k - 1].kind == TokKind::Identifier) {
        --k;
        if (k >= 2 && (toks_[k - 1].text == "." || toks_[k - 1].text == "->" || toks_[k - 1].text == "::")) {
          --k;
          continue;
        }
        break;
      }
      break;
    }
    if (k == name - 1) return;
    replace(toks_[k].begin, toks_[k].begin, "__m2v::swizzle<" + indices + ">(");
    replace(toks_[name - 1].begin, toks_[name].end, ")");
  }

  bool isVectorType(std::string_view name) const {
    return isMetalVectorTypeName(name) || context_.vectorAliases.count(name) > 0;
  }

  // `using NAME = float2;`, `using NAME = vec<T, 2>;`, `typedef metal::half4 NAME;` (also aliases of aliases).
  void collectVectorAliases() {
    auto vectorTypeAt = [&](size_t k, size_t& after) {
      if (k + 1 < toks_.size() && toks_[k].text == "const") ++k;
      if (k + 2 < toks_.size() && toks_[k].text == "metal" && toks_[k + 1].text == "::") k += 2;
      if (k >= toks_.size()) return false;
      if (toks_[k].text == "vec" && k + 1 < toks_.size() && toks_[k + 1].text == "<") {
        size_t close = matchAngle(k + 1);
        if (!close) return false;
        after = close + 1;
        return true;
      }
      after = k + 1;
      return isVectorType(toks_[k].text);
    };
    for (size_t k = 0; k + 3 < toks_.size(); ++k) {
      size_t after = 0;
      if (toks_[k].text == "using" && toks_[k + 1].kind == TokKind::Identifier && toks_[k + 2].text == "=" &&
          vectorTypeAt(k + 3, after) && after < toks_.size() && toks_[after].text == ";")
        context_.vectorAliases.insert(std::string(toks_[k + 1].text));
      if (toks_[k].text == "typedef" && vectorTypeAt(k + 1, after) && after + 1 < toks_.size() &&
          toks_[after].kind == TokKind::Identifier && toks_[after + 1].text == ";")
        context_.vectorAliases.insert(std::string(toks_[after].text));
    }
  }

  // `f(x, {a, b, c})`: a braced list of 2 to 4 values as a call argument becomes `__m2v::braced(a, b, c)`, which
  // converts to a vector (C++ cannot list-initialize a vector parameter) or to what the list initializes.
  void rewriteBracedArgument(size_t open) {
    if (open < 2) return;
    // the `(` must open a call: after a name, a template argument list, `)` or `]`
    size_t paren = open - 1;
    if (toks_[paren].text == ",") {
      // the bracket that encloses the `,`: back over whole bracketed groups
      while (paren > 0) {
        --paren;
        std::string_view w = toks_[paren].text;
        if ((w == ")" || w == "]" || w == "}") && partner(paren) != std::string_view::npos) {
          paren = partner(paren);
          continue;
        }
        if (w == "(" || w == "[" || w == "{" || w == ";") break;
      }
      if (toks_[paren].text != "(") return;
    }
    if (paren == 0) return;
    std::string_view callee = toks_[paren - 1].text;
    if (toks_[paren - 1].kind != TokKind::Identifier && callee != ">" && callee != ")" && callee != "]") return;
    if (callee == "if" || callee == "while" || callee == "for" || callee == "switch" || callee == "return" ||
        callee == "sizeof" || callee == "decltype")
      return;
    size_t close = partner(open);
    if (close == std::string_view::npos) return;
    int commas = 0;
    for (size_t k = open + 1; k < close; ++k) {
      std::string_view w = toks_[k].text;
      if ((w == "(" || w == "[" || w == "{" || w == "[[") && partner(k) != std::string_view::npos) {
        k = partner(k);
        continue;
      }
      if (w == ",") ++commas;
      if (w == ";" || ((w == "." || w == "=") && k == open + 1)) return;  // a block or designators
    }
    if (commas < 1 || commas > 3 || toks_[close - 1].text == ",") return;
    if (close + 1 >= toks_.size() || (toks_[close + 1].text != "," && toks_[close + 1].text != ")")) return;
    replace(toks_[open].begin, toks_[open].end, "__m2v::braced(");
    replace(toks_[close].begin, toks_[close].end, ")");
  }

  size_t partner(size_t k) const { return partner_[k]; }

  // `(T) x`: a C-style cast to a single name T. Metal converts vectors element-wise and half <-> bfloat by value
  // through it; C++ bit-casts or rejects both. Without types the rewriter tells a cast from a parenthesized name by
  // what follows: a name, a literal or `(` (`(T) x`, `(half4) 1.0f`, `(float4)(a + b)`); and by what precedes: not
  // a name (a call, `if (c) x = 1;`) except `return`.
  bool isCStyleCast(size_t open) const {
    if (open + 3 >= toks_.size() || toks_[open + 1].kind != TokKind::Identifier || toks_[open + 2].text != ")")
      return false;
    std::string_view name = toks_[open + 1].text;
    if (name == "void" || isBuiltinTypeKeyword(name) || isAddressSpace(name) || name == "const" || name == "volatile")
      return false;  // C++ converts its own scalar types as Metal does
    if (open > 0) {
      const Token& p = toks_[open - 1];
      if (p.kind == TokKind::Identifier && p.text != "return") return false;
      // after `)` only as the operand of another cast: `(float4)(half4) x`
      if (p.text == ")" && !(partner(open - 1) != std::string_view::npos && isCStyleCast(partner(open - 1))))
        return false;
      if (p.kind == TokKind::Number || p.kind == TokKind::String || p.text == "]" || p.text == ">" || p.text == "#")
        return false;
    }
    const Token& n = toks_[open + 3];
    if (n.kind == TokKind::Identifier)
      return !(n.text == "const" || n.text == "volatile" || n.text == "override" || n.text == "noexcept" ||
               isAddressSpace(n.text));
    if (n.kind == TokKind::Number) return true;
    // `(T)(x)`: a call through a parenthesized name is rare enough in Metal code to read this as a cast
    return n.text == "(";
  }

  // The last token of the operand of a cast that starts at token `k`: a name (qualified, with a template argument
  // list before `(` or `::`), a literal or a parenthesized expression, then calls, subscripts, member accesses and
  // postfix increments; a cast of a cast takes the inner cast's operand. npos when it is none of these.
  size_t castOperandEnd(size_t k) const {
    if (k >= toks_.size()) return std::string_view::npos;
    size_t last;
    if (toks_[k].text == "(") {
      if (partner(k) == std::string_view::npos) return std::string_view::npos;
      // a cast of a cast, also to one of C++'s own types: `(bfloat)(half)(float) x`
      bool builtinCast = partner(k) == k + 2 && toks_[k + 1].kind == TokKind::Identifier &&
                         isBuiltinTypeKeyword(toks_[k + 1].text) && k + 3 < toks_.size() &&
                         (toks_[k + 3].kind == TokKind::Identifier || toks_[k + 3].kind == TokKind::Number ||
                          toks_[k + 3].text == "(");
      if (builtinCast || isCStyleCast(k)) return castOperandEnd(partner(k) + 1);
      last = partner(k);
    } else if (toks_[k].kind == TokKind::Number) {
      last = k;
    } else if (toks_[k].kind == TokKind::Identifier) {
      last = k;
      while (true) {
        if (last + 2 < toks_.size() && toks_[last + 1].text == "::" && toks_[last + 2].kind == TokKind::Identifier) {
          last += 2;
        } else if (last + 1 < toks_.size() && toks_[last + 1].text == "<") {
          size_t close = matchAngle(last + 1);
          if (!close || close + 1 >= toks_.size() || (toks_[close + 1].text != "(" && toks_[close + 1].text != "::"))
            break;
          last = close;
          if (toks_[close + 1].text == "::" && close + 2 < toks_.size() && toks_[close + 2].kind == TokKind::Identifier)
            last = close + 2;
        } else {
          break;
        }
      }
    } else {
      return std::string_view::npos;
    }
    while (last + 1 < toks_.size()) {
      std::string_view w = toks_[last + 1].text;
      if ((w == "(" || w == "[") && partner(last + 1) != std::string_view::npos) {
        last = partner(last + 1);
      } else if ((w == "." || w == "->") && last + 2 < toks_.size() && toks_[last + 2].kind == TokKind::Identifier) {
        last += 2;
      } else {
        break;
      }
    }
    return last;
  }

  void rewriteCStyleCast(size_t open) {
    size_t end = castOperandEnd(open + 3);
    if (end == std::string_view::npos) return;
    replace(toks_[open].begin, toks_[open + 2].end, "__m2v::c_cast_<" + std::string(toks_[open + 1].text) + ">(");
    replace(toks_[end].end, toks_[end].end, ")");
  }

  // `kernel` is a Metal keyword wherever it is a word of its own: before `void`, before a type named by a typedef or
  // `decltype` in an explicit instantiation (`template [[host_name("k")]] kernel k_t k<float>;`), after `extern` or
  // `static`. Only a member access or a qualified name spells another `kernel`; in a directive it is a macro's name.
  bool isKernelKeyword(size_t i) const {
    if (prev(i, ".") || prev(i, "->") || prev(i, "::") || prev(i, "#") || prev(i, "define") || prev(i, "undef") ||
        prev(i, "ifdef") || prev(i, "ifndef") || prev(i, "defined") || prev(i, "(") || prev(i, ","))
      return false;
    if (i + 1 >= toks_.size()) return false;
    const Token& n = toks_[i + 1];
    return n.kind == TokKind::Identifier || n.text == "::" || n.text == "[[";
  }

  bool next(size_t i, std::string_view text) const { return i + 1 < toks_.size() && toks_[i + 1].text == text; }
  bool prev(size_t i, std::string_view text) const { return i > 0 && toks_[i - 1].text == text; }

  bool startsStatement(size_t i) const {
    if (i == 0) return true;
    std::string_view p = toks_[i - 1].text;
    return p == "{" || p == "}" || p == ";" || p == ":";
  }

  // After `threadgroup`: does the declaration declare a pointer or reference (which lives in thread memory)?
  bool declaresPointer(size_t i) const {
    for (; i < toks_.size(); ++i) {
      std::string_view t = toks_[i].text;
      if (t == "<" && partner(i) != std::string_view::npos)
        i = partner(i);  // a template argument list
      else if (t == ";" || t == "=" || t == "[" || t == "(" || t == "," || t == "{")
        return false;
      else if (t == "*" || t == "&" || t == "&&")
        return true;
    }
    return false;
  }

  // `f(constant int shape[4], ...)`: a parameter declared as an array in an address space is a pointer in Metal;
  // C++ rejects the address space on an array parameter, so write the pointer. `open` is the `[` after the name.
  std::optional<size_t> rewriteArrayParameter(size_t open) {
    if (open < 2) return std::nullopt;
    // The parameter's name is the token before `[`, or before an annotation macro's call between them
    // (`threadgroup float partial OPTIONAL(cond)[N]`, as uzu's DSL writes its optional threadgroup arrays).
    size_t nameAt = open - 1;
    if (toks_[nameAt].text == ")") {
      size_t call = partner(nameAt);
      if (call == std::string_view::npos || call < 3 || toks_[call - 1].kind != TokKind::Identifier)
        return std::nullopt;
      nameAt = call - 2;
    }
    if (nameAt < 1 || toks_[nameAt].kind != TokKind::Identifier) return std::nullopt;
    std::string_view beforeName = toks_[nameAt - 1].text;
    if (toks_[nameAt - 1].kind != TokKind::Identifier && beforeName != ">")
      return std::nullopt;  // a type, not `f(x[3])`
    size_t close = partner(open);
    if (close == std::string_view::npos || toks_[close].text != "]" || close + 1 >= toks_.size()) return std::nullopt;
    std::string_view after = toks_[close + 1].text;
    if (after != "," && after != ")" && after != "[[") return std::nullopt;
    bool inAddressSpace = false;  // the parameter, back to its `(` or `,`, names an address space
    for (size_t k = nameAt; k > 0; --k) {
      std::string_view w = toks_[k - 1].text;
      if (w == "(" || w == "," || w == ";" || w == "{") break;
      inAddressSpace |= w == "device" || w == "constant" || w == "threadgroup";
    }
    if (!inAddressSpace) return std::nullopt;
    const Token& name = toks_[nameAt];
    if (nameAt + 1 == open) {
      replace(name.begin, toks_[close].end, "* " + std::string(name.text));
    } else {
      replace(name.begin, name.begin, "* ");
      replace(toks_[open].begin, toks_[close].end, "");
    }
    return close;
  }

  // Inserts ` = {}` before each top-level `,` and the `;` of the declaration that starts at token `i`.
  void addEmptyInitializers(size_t i) {
    for (; i < toks_.size(); ++i) {
      std::string_view t = toks_[i].text;
      if ((t == "(" || t == "[" || t == "{" || t == "<") && partner(i) != std::string_view::npos)
        i = partner(i);  // over the whole group
      else if (t == "=")
        return;  // already initialized (not valid Metal; let clang say so)
      else if (t == "," || t == ";") {
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
           n == "&" || n == "override" || n == ":" || isAddressSpace(n);
  }

  static bool isAddressSpace(std::string_view w) {
    return w == "device" || w == "constant" || w == "threadgroup" || w == "thread";
  }

  // Metal overloads methods and constructors on the address space of `this` (`T get() device` beside
  // `T get() threadgroup`). Here every object is reached through one generic `this`, so the qualifier goes and the
  // first declaration of each signature in a class serves every address space; later ones that differ only in the
  // qualifier are removed (their lines stay, empty). `q` is an address-space qualifier after a parameter list.
  // Returns the last token of a removed declaration.
  std::optional<size_t> removeAddressSpaceOverload(size_t q) {
    if (scopes_.empty()) return std::nullopt;  // a free function: nothing to collide with
    // The declaration's first token: after the previous `;`, `{`, `}` or access specifier of this scope.
    size_t begin = q;
    while (begin > 0) {
      std::string_view w = toks_[begin - 1].text;
      if ((w == ")" || w == "]" || w == "]]") && partner(begin - 1) != std::string_view::npos) {
        begin = partner(begin - 1);  // over the whole group
        continue;
      }
      if (w == "(" || w == "[" || w == "[[") return std::nullopt;  // inside a group: not a declaration of the class
      if (w == ";" || w == "{" || w == "}") break;
      if (w == ":" && begin >= 2 &&
          (toks_[begin - 2].text == "public" || toks_[begin - 2].text == "private" ||
           toks_[begin - 2].text == "protected"))
        break;
      --begin;
    }
    // The end of the declarator: the qualifiers that follow, up to the body, initializers, `= default` or `;`.
    size_t j = q;
    std::string key;
    for (size_t k = begin; k < toks_.size(); ++k) {
      std::string_view w = toks_[k].text;
      if (k > q && (w == "{" || w == ";" || w == ":" || w == "=")) {
        j = k;
        break;
      }
      if (k >= q && isAddressSpace(w)) continue;
      key += std::string(w) + " ";
    }
    if (j == q) return std::nullopt;
    std::optional<size_t> end = declarationEnd(j);
    if (!end) return std::nullopt;
    bool seen = !seenMethods_.insert({scopes_.back(), key}).second || hasUnqualifiedTwin(scopes_.back(), begin, key);
    if (!seen) return std::nullopt;  // the first of its kind: keep it (the caller drops the qualifier)
    replace(toks_[begin].begin, toks_[*end].end, linesOf(toks_[begin].begin, toks_[*end].end));
    return *end;
  }

  // Whether the class body that opens at `scope` declares, before token `before`, a method or constructor without an
  // address-space qualifier whose declaration reads `key` (`MD() = default;` before `MD() threadgroup = default;`).
  bool hasUnqualifiedTwin(size_t scope, size_t before, const std::string& key) const {
    size_t declBegin = scope + 1;
    for (size_t k = scope + 1; k < before; ++k) {
      std::string_view w = toks_[k].text;
      if (w == "{" && partner(k) != std::string_view::npos) {  // a body or a nested class: skip it
        k = partner(k);
        declBegin = k + 1;
        continue;
      }
      if (w == ";" ||
          (w == ":" && k > 0 &&
           (toks_[k - 1].text == "public" || toks_[k - 1].text == "private" || toks_[k - 1].text == "protected"))) {
        declBegin = k + 1;
        continue;
      }
      if (w != "(" || partner(k) == std::string_view::npos) continue;
      size_t after = partner(k) + 1;
      while (after < toks_.size() && (toks_[after].text == "const" || toks_[after].text == "volatile")) ++after;
      if (after >= toks_.size() || isAddressSpace(toks_[after].text)) continue;
      std::string_view n = toks_[after].text;
      if (n != "{" && n != ";" && n != ":" && n != "=") continue;
      std::string twin;
      for (size_t t = declBegin; t < after; ++t) twin += std::string(toks_[t].text) + " ";
      if (twin == key) return true;
    }
    return false;
  }

  // From the token after a declarator (`{`, `;`, `:` of a constructor's initializers, `=` of `= default`), the last
  // token of the declaration.
  std::optional<size_t> declarationEnd(size_t j) const {
    auto closing = [&](size_t open) -> std::optional<size_t> {
      if (partner(open) == std::string_view::npos) return std::nullopt;
      return partner(open);
    };
    std::string_view w = toks_[j].text;
    if (w == ";") return j;
    if (w == "=") {
      for (size_t k = j; k < toks_.size(); ++k)
        if (toks_[k].text == ";") return k;
      return std::nullopt;
    }
    if (w == ":") {  // member initializers: name(...) or name{...}, separated by commas, then the body
      size_t k = j + 1;
      while (k < toks_.size()) {
        while (k < toks_.size() && toks_[k].text != "(" && toks_[k].text != "{") ++k;
        if (k >= toks_.size()) return std::nullopt;
        auto c = closing(k);
        if (!c) return std::nullopt;
        k = *c + 1;
        if (k < toks_.size() && toks_[k].text == ",") {
          ++k;
          continue;
        }
        break;
      }
      if (k >= toks_.size() || toks_[k].text != "{") return std::nullopt;
      j = k;
    }
    return closing(j);
  }

  // The line breaks of a source range (with their line continuations), so that removing it keeps every line.
  std::string linesOf(size_t begin, size_t end) const {
    std::string out;
    for (size_t k = begin; k < end; ++k) {
      if (src_[k] != '\n') continue;
      if (k > begin && src_[k - 1] == '\\') out += '\\';
      out += '\n';
    }
    return out;
  }

  // The `>` that closes the template argument list opening at `open` (see matchBrackets), or 0.
  size_t matchAngle(size_t open) const { return partner(open) == std::string_view::npos ? 0 : partner(open); }

  // Metal's attributes are clang attributes (MetalAttributes.cpp): clang parses `[[...]]` itself. Two things are
  // left to do on the tokens. The name `threadgroup` is spelled `__m2v_threadgroup`, as the preprocessor would expand
  // it as the address space (a macro of metal_stdlib) before the parser sees the attribute. And Metal allows an
  // attribute list on an explicit instantiation (`template [[host_name("k")]] [[kernel]] void k<float>(...);`),
  // where C++ allows none: there the list becomes the GNU spelling of the same attributes, which C++ allows on the
  // declaration specifiers (`kernel` becomes its annotation: clang's GNU `kernel` is another attribute). `open` is
  // the `[[` of an attribute list; returns its `]]`.
  std::optional<size_t> rewriteAttributeNames(size_t open) {
    size_t close = partner(open);
    if (close == std::string_view::npos || toks_[close].text != "]]") return std::nullopt;
    bool gnu = startsExplicitInstantiation(open);
    bool namePosition = true;
    for (size_t k = open + 1; k < close; ++k) {
      const Token& w = toks_[k];
      if (w.text == "(" && partner(k) != std::string_view::npos) {
        k = partner(k);
        namePosition = false;
        continue;
      }
      if (namePosition && w.text == "threadgroup" && !next(k, "::")) replace(w.begin, w.end, "__m2v_threadgroup");
      if (gnu && namePosition && w.text == "kernel" && !next(k, "::"))
        replace(w.begin, w.end, "annotate(\"m2v.kernel\")");
      namePosition = w.text == ",";
    }
    if (gnu) {
      replace(toks_[open].begin, toks_[open].end, "__attribute__((");
      replace(toks_[close].begin, toks_[close].end, "))");
    }
    return close;
  }

  // Whether the attribute list that opens at `open` is among the attribute lists and `kernel` keywords that follow
  // the `template` of an explicit instantiation (`template`, `extern template`; not `template <`).
  bool startsExplicitInstantiation(size_t open) const {
    size_t k = open;
    while (k > 0) {
      const Token& p = toks_[k - 1];
      if (p.text == "]]" && partner(k - 1) != std::string_view::npos && toks_[partner(k - 1)].text == "[[") {
        k = partner(k - 1);
      } else if (p.text == "kernel") {
        --k;
      } else {
        break;
      }
    }
    return k > 0 && toks_[k - 1].text == "template" &&
           !(k >= 2 && (toks_[k - 2].text == "::" || toks_[k - 2].text == "." || toks_[k - 2].text == "->"));
  }

  void replace(size_t begin, size_t end, std::string text) { pending_.push_back({begin, end, std::move(text)}); }

  RewrittenSource finish() {
    // At one position insertions come first, then the larger edit wins (a removed declaration over a rewrite
    // inside it).
    // Of two insertions at one position the later-made comes first: it opens the outer of two nested wraps
    // (`b.rg.y` -> `swizzle<1>(swizzle<0, 1>(b))`).
    for (size_t k = 0; k < pending_.size(); ++k) pending_[k].order = k;
    std::sort(pending_.begin(), pending_.end(), [](const auto& a, const auto& b) {
      if (a.begin != b.begin) return a.begin < b.begin;
      bool ai = a.begin == a.end, bi = b.begin == b.end;
      if (ai != bi) return ai;
      if (ai) return a.order > b.order;
      if (a.end != b.end) return a.end > b.end;
      return a.order < b.order;
    });
    RewrittenSource out;
    size_t pos = 0;
    for (const PendingEdit& e : pending_) {
      if (e.begin < pos) continue;  // overlapping edits cannot happen by construction; be safe
      out.text.append(src_.substr(pos, e.begin - pos));
      size_t rb = out.text.size();
      // Metal writes attributes straight after a name (`x[[buffer(0)]]`): a replacement that starts or ends with a
      // name must not fuse with the name beside it.
      std::string text = e.text;
      if (!text.empty() && isIdentChar(text.front()) && !out.text.empty() && isIdentChar(out.text.back()))
        text.insert(text.begin(), ' ');
      if (!text.empty() && isIdentChar(text.back()) && e.end < src_.size() && isIdentChar(src_[e.end]))
        text.push_back(' ');
      out.text += text;
      out.edits.push_back({rb, out.text.size(), e.begin, e.end});
      pos = e.end;
    }
    out.text.append(src_.substr(pos));
    return out;
  }

  struct PendingEdit {
    size_t begin, end;
    std::string text;
    size_t order = 0;  // when it was made
  };
  std::string_view src_;
  std::vector<Token> toks_;
  std::vector<size_t> partner_;  // matchBrackets(toks_)
  std::vector<PendingEdit> pending_;
  RewriteContext& context_;
  const std::set<size_t>* boolSwizzles_ = nullptr;        // this file's, when the front end found any
  std::vector<size_t> scopes_;                            // the `{` of each enclosing brace scope
  std::vector<bool> codeScopes_;                          // whether each enclosing brace scope holds statements
  std::set<std::pair<size_t, std::string>> seenMethods_;  // (scope, signature) of address-space-qualified methods
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

void collectRewriteContext(std::string_view source, RewriteContext& context) { Rewriter(source, context).collect(); }

std::vector<std::pair<std::string, bool>> includeDirectives(std::string_view s) {
  std::vector<std::pair<std::string, bool>> out;
  std::vector<Token> toks = lex(s);
  for (size_t k = 0; k + 2 < toks.size(); ++k) {
    if (toks[k].text != "#" || toks[k + 1].text != "include") continue;
    if (toks[k + 2].kind == TokKind::String && toks[k + 2].text.size() >= 2 && toks[k + 2].text[0] == '"') {
      out.push_back({std::string(toks[k + 2].text.substr(1, toks[k + 2].text.size() - 2)), true});
    } else if (toks[k + 2].text == "<") {
      size_t close = s.find('>', toks[k + 2].end);
      size_t eol = s.find('\n', toks[k + 2].end);
      if (close != std::string_view::npos && close < eol)
        out.push_back({std::string(s.substr(toks[k + 2].end, close - toks[k + 2].end)), false});
    }
  }
  return out;
}

RewrittenSource rewriteMetalSource(std::string_view source, RewriteContext* context, std::string_view path) {
  RewriteContext local;
  return Rewriter(source, context ? *context : local, path).run();
}

}  // namespace m2v::frontend
