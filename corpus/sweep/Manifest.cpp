// Parses corpus manifests (*.cases). Format: corpus/README.md.
#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "Corpus.h"

namespace m2v::corpus {

namespace fs = std::filesystem;

const char* stageName(Stage s) {
  switch (s) {
    case Stage::None: return "none";
    case Stage::Parse: return "parse";
    case Stage::IR: return "IR";
    case Stage::SpirV: return "SPIR-V";
    case Stage::Valid: return "valid";
    case Stage::Ran: return "ran";
    case Stage::Matched: return "matched";
  }
  return "?";
}

uint64_t BufferSpec::count() const {
  uint64_t n = 1;
  for (uint64_t d : shape) n *= d;
  return n;
}

namespace {

std::vector<std::string> words(const std::string& line) {
  std::vector<std::string> w;
  std::istringstream in(line);
  std::string s;
  while (in >> s) w.push_back(s);
  return w;
}

std::vector<std::string> splitOn(const std::string& s, char sep) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    size_t p = s.find(sep, start);
    parts.push_back(s.substr(start, p - start));
    if (p == std::string::npos) break;
    start = p + 1;
  }
  return parts;
}

bool toDouble(const std::string& s, double& v) {
  if (s == "true") return v = 1, true;
  if (s == "false") return v = 0, true;
  if (s == "inf") return v = INFINITY, true;
  if (s == "-inf") return v = -INFINITY, true;
  char* end = nullptr;
  v = std::strtod(s.c_str(), &end);
  return !s.empty() && end && *end == 0;
}

// A whole number from `lo` to `hi` (a double that does not fit would convert with undefined behaviour).
bool toWhole(const std::string& s, double lo, double hi, uint64_t& out) {
  double d;
  if (!toDouble(s, d) || !(d >= lo && d <= hi) || d != std::floor(d)) return false;
  out = uint64_t(d);
  return true;
}

bool toSize3(const std::string& s, Size3& out) {
  auto p = splitOn(s, ',');
  if (p.empty() || p.size() > 3) return false;
  uint32_t v[3] = {1, 1, 1};
  for (size_t i = 0; i < p.size(); ++i) {
    uint64_t d;
    if (!toWhole(p[i], 1, UINT32_MAX, d)) return false;
    v[i] = uint32_t(d);
  }
  out = {v[0], v[1], v[2]};
  return true;
}

bool knownDType(const std::string& t) {
  static const char* k[] = {"f32", "f16", "bf16", "i8", "i16", "i32", "i64", "u8", "u16", "u32", "u64", "bool"};
  return std::find(std::begin(k), std::end(k), t) != std::end(k);
}

std::string metalName(const std::string& t) {
  if (t == "f32") return "float";
  if (t == "f16") return "half";
  if (t == "bf16") return "bfloat";
  if (t == "i32") return "int";
  if (t == "u32") return "uint";
  return t;
}

std::string substitute(std::string line, const std::string& dtype) {
  if (dtype.empty()) return line;
  for (auto [key, val] : {std::pair<std::string, std::string>{"$M", metalName(dtype)}, {"$T", dtype}}) {
    size_t p;
    // Search on after each replacement: a value that itself contains the key ("dtypes=bf$T") must not expand forever.
    for (p = line.find(key); p != std::string::npos; p = line.find(key, p + val.size())) line.replace(p, key.size(), val);
  }
  return line;
}

double defaultTolerance(const std::string& dtype) {
  if (dtype == "f16") return 1e-3;
  if (dtype == "bf16") return 1e-2;
  return 1e-5;
}

struct Block {
  std::string file, source;
  int line = 0;
  std::string header;  // rest of the `case` line
  std::vector<std::pair<int, std::string>> body;
};

// Parses one expanded case. Returns "" or an error message; `errLine` is set to the offending line.
std::string parseCase(const Block& b, const std::string& dtype, Case& c, int& errLine) {
  c.manifest = b.file;
  c.line = b.line;
  c.source = b.source;
  c.dtype = dtype;
  c.name = substitute(words(b.header)[0], dtype);
  std::map<std::string, double> tols;
  bool haveTol = false;
  double tol = 0;
  for (auto& [ln, raw] : b.body) {
    errLine = ln;
    std::string text = substitute(raw, dtype);
    auto w = words(text);
    const std::string& k = w[0];
    auto need = [&](size_t n) { return w.size() >= n; };
    if (k == "entry" && need(2)) {
      c.entry = w[1];
    } else if (k == "source" && need(2)) {
      c.source = (fs::path(b.file).parent_path() / w[1]).string();
    } else if ((k == "grid" || k == "groups") && need(2)) {
      c.groups = k == "groups";
      if (!toSize3(w[1], c.grid)) return "bad size '" + w[1] + "'";
    } else if (k == "threadgroup" && need(2)) {
      if (!toSize3(w[1], c.threadgroup)) return "bad size '" + w[1] + "'";
    } else if (k == "buffer" && need(6)) {
      BufferSpec s;
      uint64_t idx;
      if (!toWhole(w[1], 0, 30, idx)) return "bad buffer index (0 to 30)";
      s.index = uint32_t(idx);
      s.name = w[2];
      s.role = w[3];
      s.dtype = w[4];
      if (s.role != "in" && s.role != "out" && s.role != "inout" && s.role != "scratch") return "bad role '" + s.role + "'";
      if (!knownDType(s.dtype)) return "unknown dtype '" + s.dtype + "'";
      for (const std::string& d : splitOn(w[5], 'x')) {
        uint64_t v;
        if (!toWhole(d, 1, double(1ull << 32), v)) return "bad shape '" + w[5] + "'";
        s.shape.push_back(v);
      }
      uint64_t elements = 1;
      for (uint64_t d : s.shape)
        if (__builtin_mul_overflow(elements, d, &elements) || elements > (1ull << 34)) return "buffer too large";
      s.init = w.size() > 6 ? w[6] : "zero";
      if (w.size() > 7) s.initArgs.assign(w.begin() + 7, w.end());
      if (s.init != "rand" && s.init != "iota" && s.init != "const" && s.init != "zero" && s.init != "bits" &&
          s.init != "addrtable")
        return "unknown init '" + s.init + "'";
      c.buffers.push_back(s);
    } else if (k == "bytes" && need(3)) {
      BytesSpec s;
      uint64_t idx;
      if (!toWhole(w[1], 0, 30, idx)) return "bad bytes index (0 to 30)";
      s.index = uint32_t(idx);
      for (size_t i = 2; i < w.size(); ++i) {  // NAME=DTYPE:V[,V...]
        size_t eq = w[i].find('='), colon = w[i].find(':');
        if (eq == std::string::npos || colon == std::string::npos || colon < eq) return "bad field '" + w[i] + "'";
        BytesField f{w[i].substr(0, eq), w[i].substr(eq + 1, colon - eq - 1), {}};
        if (!knownDType(f.dtype)) return "unknown dtype '" + f.dtype + "'";
        for (const std::string& v : splitOn(w[i].substr(colon + 1), ',')) {
          double d;
          if (!toDouble(v, d)) return "bad value '" + v + "'";
          f.values.push_back(d);
        }
        s.fields.push_back(f);
      }
      c.bytes.push_back(s);
    } else if (k == "fc" && need(5)) {
      FunctionConstantSpec f;
      uint64_t idx;
      if (!toWhole(w[1], 0, 65535, idx) || !toDouble(w[4], f.value)) return "bad function constant";
      f.index = uint32_t(idx);
      f.name = w[2];
      f.dtype = w[3];
      c.constants.push_back(f);
    } else if (k == "tgmem" && need(3)) {
      uint64_t i, n;
      if (!toWhole(w[1], 0, 30, i) || !toWhole(w[2], 0, UINT32_MAX, n)) return "bad tgmem";
      c.tgmem.push_back({uint32_t(i), uint32_t(n)});
    } else if (k == "ref" && need(2)) {
      c.ref = w[1];
      for (size_t i = 2; i < w.size(); ++i) {
        size_t eq = w[i].find('=');
        double v;
        if (eq == std::string::npos || !toDouble(w[i].substr(eq + 1), v)) return "bad ref parameter '" + w[i] + "'";
        c.params[w[i].substr(0, eq)] = v;
      }
    } else if (k == "tol" && need(2)) {
      haveTol = true;
      for (size_t i = 1; i < w.size(); ++i) {
        size_t eq = w[i].find('=');
        double v;
        if (eq == std::string::npos) {
          if (!toDouble(w[i], tol)) return "bad tolerance";
          tols.clear();
        } else if (toDouble(w[i].substr(eq + 1), v)) {
          tols[w[i].substr(0, eq)] = v;
        } else {
          return "bad tolerance '" + w[i] + "'";
        }
      }
    } else if (k == "membound") {
      c.memoryBound = true;
    } else if (k == "note") {
      c.note = text.substr(text.find("note") + 4);
    } else {
      return "unknown or incomplete line '" + text + "'";
    }
  }
  errLine = b.line;
  if (c.entry.empty()) return "case without entry";
  if (c.ref.empty()) return "case without ref";
  if (c.grid.x == 0) return "case without grid";
  std::string td = dtype.empty() ? "f32" : dtype;
  c.tolerance = defaultTolerance(td);
  if (haveTol) c.tolerance = tols.empty() ? tol : (tols.count(td) ? tols[td] : c.tolerance);
  return "";
}

}  // namespace

std::vector<Case> loadCorpus(const std::string& dir, const std::string& filter, std::vector<std::string>& errors) {
  std::vector<fs::path> files;
  std::error_code ec;
  for (auto& e : fs::directory_iterator(dir, ec))
    if (e.path().extension() == ".cases") files.push_back(e.path());
  if (ec) errors.push_back(dir + ": " + ec.message());
  std::sort(files.begin(), files.end());
  std::vector<Case> cases;
  std::map<std::string, std::string> seen;
  for (const fs::path& f : files) {
    std::ifstream in(f);
    std::string line, source = (f.parent_path() / (f.stem().string() + ".metal")).string();
    int ln = 0;
    Block cur;
    bool inCase = false;
    auto fail = [&](int at, const std::string& m) { errors.push_back(f.string() + ":" + std::to_string(at) + ": " + m); };
    while (std::getline(in, line)) {
      ++ln;
      size_t hash = line.find('#');
      if (hash != std::string::npos) line = line.substr(0, hash);
      auto w = words(line);
      if (w.empty()) continue;
      if (!inCase) {
        if (w[0] == "source" && w.size() == 2) {
          source = (f.parent_path() / w[1]).string();
        } else if (w[0] == "case" && w.size() >= 2) {
          cur = Block{f.string(), source, ln, line.substr(line.find("case") + 4), {}};
          inCase = true;
        } else {
          fail(ln, "expected 'case NAME' or 'source FILE'");
        }
        continue;
      }
      if (w[0] == "end") {
        inCase = false;
        std::vector<std::string> dtypes{""};
        for (const std::string& h : words(cur.header))
          if (h.rfind("dtypes=", 0) == 0) dtypes = splitOn(h.substr(7), ',');
        for (const std::string& dt : dtypes) {
          Case c;
          int errLine = cur.line;
          std::string err = parseCase(cur, dt, c, errLine);
          if (!err.empty()) {
            fail(errLine, err);
            continue;
          }
          if (seen.count(c.name)) {
            fail(cur.line, "duplicate case name '" + c.name + "' (also " + seen[c.name] + ")");
            continue;
          }
          seen[c.name] = f.string() + ":" + std::to_string(cur.line);
          if (filter.empty() || c.name.find(filter) != std::string::npos) cases.push_back(std::move(c));
        }
        continue;
      }
      cur.body.push_back({ln, line});
    }
    if (inCase) fail(cur.line, "case without 'end'");
  }
  return cases;
}

}  // namespace m2v::corpus
