#include "cache.h"

#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

namespace fs = std::filesystem;
using nlohmann::json;

namespace m2v::review {

// Bumped when the model or its serialization changes.
static const char* kFormat = "m2v-review-model-3";

static std::string fnv(const std::string& data, uint64_t h = 1469598103934665603ull) {
  for (unsigned char c : data) h = (h ^ c) * 1099511628211ull;
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(h));
  return buf;
}

bool readFile(const std::string& path, std::string& out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  std::ostringstream ss;
  ss << in.rdbuf();
  out = ss.str();
  return true;
}

static std::string fileHash(const std::string& path) {
  std::string text;
  return readFile(path, text) ? fnv(text) : "missing";
}

// The running tool: a rebuilt binary (new front end or checks) must not reuse models of an older one.
static std::string toolId() {
  struct stat st {};
  if (stat("/proc/self/exe", &st) != 0) return "unknown";
  return std::to_string(st.st_size) + ":" + std::to_string(st.st_mtime);
}

std::string defaultCacheDir() {
  if (const char* d = std::getenv("M2V_REVIEW_CACHE"); d && *d) return d;
  if (const char* x = std::getenv("XDG_CACHE_HOME"); x && *x) return std::string(x) + "/m2v-review";
  if (const char* h = std::getenv("HOME"); h && *h) return std::string(h) + "/.cache/m2v-review";
  return "";
}

static void to_json(json& j, const Cond& c) { j = {c.text, c.kind, c.owner, c.line, c.envGated, c.onceFlag, c.vars}; }
static void from_json(const json& j, Cond& c) {
  c.text = j[0];
  c.kind = j[1];
  c.owner = j[2];
  c.line = j[3];
  c.envGated = j[4];
  c.onceFlag = j[5];
  c.vars = j[6].get<std::vector<std::string>>();
}
static void to_json(json& j, const Loop& l) { j = {l.header, l.kind, l.line, l.constBound}; }
static void from_json(const json& j, Loop& l) {
  l.header = j[0];
  l.kind = j[1];
  l.line = j[2];
  l.constBound = j[3];
}
static void to_json(json& j, const Event& e) {
  j = {{"k", e.kind},         {"n", e.name},          {"q", e.qualName}, {"c", e.calleeKey}, {"r", e.receiver},
       {"rv", e.receiverVar}, {"rt", e.receiverType}, {"a", e.args},     {"av", e.argVars},  {"t", e.templateArgs},
       {"x", e.text},         {"u", e.use},           {"l", e.line},     {"col", e.col},     {"cd", e.conds},
       {"lp", e.loops},       {"ic", e.inCondition},  {"io", e.inOnce},  {"w", e.isWrite}};
}
static void from_json(const json& j, Event& e) {
  e.kind = j["k"];
  e.name = j["n"];
  e.qualName = j["q"];
  e.calleeKey = j["c"];
  e.receiver = j["r"];
  e.receiverVar = j["rv"];
  e.receiverType = j["rt"];
  e.args = j["a"].get<std::vector<std::string>>();
  e.argVars = j["av"].get<std::vector<std::string>>();
  e.templateArgs = j["t"];
  e.text = j["x"];
  e.use = j["u"];
  e.line = j["l"];
  e.col = j["col"];
  e.conds = j["cd"].get<std::vector<Cond>>();
  e.loops = j["lp"].get<std::vector<Loop>>();
  e.inCondition = j["ic"];
  e.inOnce = j["io"];
  e.isWrite = j["w"];
}
static void to_json(json& j, const Var& v) {
  j = {v.name, v.type, v.line, v.isParam, v.isStatic, v.initText, v.initKind, v.initCallee, v.initVars};
}
static void from_json(const json& j, Var& v) {
  v.name = j[0];
  v.type = j[1];
  v.line = j[2];
  v.isParam = j[3];
  v.isStatic = j[4];
  v.initText = j[5];
  v.initKind = j[6];
  v.initCallee = j[7];
  v.initVars = j[8].get<std::vector<std::string>>();
}
static void to_json(json& j, const Function& f) {
  j = {{"key", f.key},
       {"name", f.name},
       {"qual", f.qualName},
       {"class", f.className},
       {"file", f.file},
       {"line", f.line},
       {"end", f.endLine},
       {"params", f.params},
       {"overrides", f.overrides},
       {"virtual", f.isVirtual},
       {"internal", f.internalLinkage},
       {"events", f.events},
       {"vars", f.vars}};
}
static void from_json(const json& j, Function& f) {
  f.key = j["key"];
  f.name = j["name"];
  f.qualName = j["qual"];
  f.className = j["class"];
  f.file = j["file"];
  f.line = j["line"];
  f.endLine = j["end"];
  f.params = j["params"].get<std::vector<std::string>>();
  f.overrides = j["overrides"].get<std::vector<std::string>>();
  f.isVirtual = j["virtual"];
  f.internalLinkage = j["internal"];
  f.events = j["events"].get<std::vector<Event>>();
  f.vars = j["vars"].get<std::vector<Var>>();
}

static std::string optionsKey(const ParseOptions& o) {
  std::string k = std::string(kFormat) + "|" + toolId() + "|" + o.root + "|" + o.compileCommands + "|";
  for (auto* l : {&o.includeDirs, &o.envFunctions, &o.onceFunctions, &o.arrayTypes})
    for (auto& s : *l) k += s + ";";
  if (!o.compileCommands.empty()) k += fileHash(o.compileCommands);
  return k;
}

static bool traceOn() {
  static const bool on = std::getenv("M2V_REVIEW_TRACE_PREFIX") != nullptr;
  return on;
}

static json stamp(const std::string& path) {
  std::error_code ec;
  auto size = fs::file_size(path, ec);
  if (ec) return json::array({path, -1, 0});
  auto t = fs::last_write_time(path, ec).time_since_epoch().count();
  return json::array({path, static_cast<long long>(size), static_cast<long long>(t)});
}

// The precompiled prefix of a run (prefix.h): built once into the cache directory and reused while the outside
// headers it read are unchanged; "" when there is none to build or it is refused (then units parse as they are).
static std::string preparePch(const ParseOptions& opts, const std::string& cacheDir) {
  if (opts.prefix.headers.empty() || !opts.compileCommands.empty()) return "";
  static std::map<std::string, std::string> built;  // key -> pch ("" = refused), for this process
  std::string k = std::string(kFormat) + "|" + toolId() + "|" + opts.root + "|";
  for (auto& d : opts.includeDirs) k += d + ";";
  k += "|";
  for (auto* l : {&opts.prefix.headers})
    for (auto& h : *l) k += h + ";";
  for (auto* l : {&opts.prefix.treeMacros, &opts.prefix.treeConditions}) {
    k += "|";
    for (auto& h : *l) k += h + ";";
  }
  const std::string key = fnv(k);
  if (auto it = built.find(key); it != built.end()) return it->second;
  std::string dir = cacheDir;
  std::error_code ec;
  if (dir.empty()) {
    static std::string tmp;
    if (tmp.empty()) {
      tmp = (fs::temp_directory_path(ec) / ("m2v-review-prefix-" + std::to_string(::getpid()))).string();
      std::atexit([] {
        std::error_code e;
        fs::remove_all(tmp, e);
      });
    }
    dir = tmp;
    fs::create_directories(dir, ec);
  }
  const std::string base = dir + "/prefix-" + key;
  const std::string header = base + ".h", pch = base + ".pch", side = base + ".json";
  std::string stored;
  if (readFile(side, stored)) try {
      json j = json::parse(stored);
      bool fresh = fs::exists(pch, ec) || !j["ok"].get<bool>();
      for (auto& in : j["inputs"]) fresh = fresh && stamp(in[0]) == in;
      if (fresh) {
        std::string use = j["ok"].get<bool>() ? pch : "";
        if (traceOn()) std::fprintf(stderr, "m2v review: prefix %s (stored)\n", use.empty() ? "refused" : use.c_str());
        return built[key] = use;
      }
    } catch (const std::exception&) {
    }
  std::string text = "// outside headers of the units, precompiled once (m2v review)\n";
  for (auto& h : opts.prefix.headers) text += "#if __has_include(<" + h + ">)\n#include <" + h + ">\n#endif\n";
  // A prefix built from this header (by another run sharing the cache) records its time: leave an identical one
  // as it is, and replace it whole, never rewrite it in place.
  std::string old;
  if (!readFile(header, old) || old != text) {
    std::string tmp = header + ".tmp" + std::to_string(::getpid());
    {
      std::ofstream o(tmp, std::ios::binary);
      o << text;
    }
    fs::rename(tmp, header, ec);
    if (ec) return built[key] = "";
  }
  std::vector<std::string> inputs;
  std::set<std::string> macros;
  std::string why;
  std::string tmpPch = pch + ".tmp" + std::to_string(::getpid());
  bool ok = buildPrefixPch(opts, header, tmpPch, inputs, macros, why);
  if (ok) {
    // Neither side may see the other's macros: an outside macro the tree tests, a tree macro an outside header names.
    for (auto& m : macros)
      if (opts.prefix.treeConditions.count(m)) {
        ok = false;
        why = "the tree tests `" + m + "`, which an outside header defines";
        break;
      }
  }
  if (ok) {
    std::set<std::string> names;
    for (auto& f : inputs) {
      if (f == header) continue;
      std::string t;
      if (readFile(f, t)) identifiersIn(t, names);
    }
    for (auto& m : opts.prefix.treeMacros)
      if (names.count(m)) {
        ok = false;
        why = "the tree defines `" + m + "`, which an outside header names";
        break;
      }
  }
  if (ok) fs::rename(tmpPch, pch, ec);
  if (ec || !ok) fs::remove(tmpPch, ec);
  if (traceOn())
    std::fprintf(stderr, "m2v review: prefix %s%s\n", ok ? "built " : "refused: ", ok ? pch.c_str() : why.c_str());
  json j;
  j["ok"] = ok;
  j["why"] = why;
  json ins = json::array();
  for (auto& f : inputs) ins.push_back(stamp(f));
  j["inputs"] = ins;
  std::string tmp = side + ".tmp" + std::to_string(::getpid());
  {
    std::ofstream o(tmp, std::ios::binary);
    o << j.dump();
  }
  fs::rename(tmp, side, ec);
  return built[key] = ok ? pch : "";
}

bool parseUnits(const ParseOptions& opts, const CacheOptions& cache, std::vector<UnitModel>& out, std::string& err) {
  if (opts.files.empty()) {
    err = "no translation units to parse";
    return false;
  }
  std::string dir = cache.enabled ? (cache.dir.empty() ? defaultCacheDir() : cache.dir) : "";
  std::error_code ec;
  if (!dir.empty()) fs::create_directories(dir, ec);
  if (ec) dir.clear();
  const std::string okey = optionsKey(opts);
  // Units to parse (cache misses) run on `jobs` threads, each into a model of its own; results merge in file order.
  struct Slot {
    ParseStatus ps;
    Codebase unit;
    bool hit = false, failed = false;
    std::string entry, err;
  };
  std::vector<Slot> slots(opts.files.size());
  for (size_t i = 0; i < opts.files.size(); ++i) {
    const std::string& file = opts.files[i];
    Slot& sl = slots[i];
    std::string text;
    readFile(file, text);
    const std::string entry = dir.empty() ? "" : dir + "/" + fnv(okey + "|" + file + "|" + text) + ".json";
    sl.entry = entry;
    ParseStatus& ps = sl.ps;
    ps.file = file;
    Codebase& unit = sl.unit;
    bool& hit = sl.hit;
    if (!entry.empty()) {
      std::string stored;
      if (readFile(entry, stored)) try {
          json j = json::parse(stored);
          bool fresh = j["format"] == kFormat && j["file"] == file;
          for (auto& d : j["deps"]) fresh = fresh && fileHash(d[0]) == d[1].get<std::string>();
          if (fresh) {
            for (auto& f : j["functions"]) {
              Function fn = f.get<Function>();
              unit.functions.emplace(fn.key, std::move(fn));
            }
            ps.errors = j["errors"];
            ps.firstError = j["first_error"];
            for (auto& d : j["deps"]) ps.deps.push_back(d[0]);
            ps.cached = hit = true;
            std::error_code te;
            fs::last_write_time(entry, fs::file_time_type::clock::now(), te);  // used: keep it
          }
        } catch (const std::exception&) {
          hit = false;  // unreadable entry: parse again and overwrite it
        }
    }
  }
  std::vector<size_t> misses;
  for (size_t i = 0; i < slots.size(); ++i)
    if (!slots[i].hit) misses.push_back(i);
  // Units to parse: the outside headers they share are parsed once, into a precompiled prefix (kept in the cache
  // directory for the next run, and for the next round of a unit selection).
  std::string pch = opts.pch;
  if (pch.empty() && !misses.empty()) pch = preparePch(opts, dir);
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t m; (m = next.fetch_add(1)) < misses.size();) {
      Slot& sl = slots[misses[m]];
      ParseOptions one = opts;
      one.pch = pch;
      one.files = {sl.ps.file};
      if (!parseCodebase(one, sl.unit, sl.err))
        sl.failed = true;
      else if (!sl.unit.parseStatus.empty())
        sl.ps = sl.unit.parseStatus.front();
    }
  };
  unsigned want = cache.jobs;
  if (want == 0) {
    if (const char* e = std::getenv("M2V_REVIEW_JOBS"); e && std::atoi(e) > 0)
      want = static_cast<unsigned>(std::atoi(e));
    else
      want = std::min(8u, std::max(1u, std::thread::hardware_concurrency()));
  }
  unsigned jobs = std::max(1u, std::min<unsigned>(want, static_cast<unsigned>(misses.size())));
  std::vector<std::thread> pool;
  for (unsigned t = 1; t < jobs; ++t) pool.emplace_back(work);
  work();
  for (auto& t : pool) t.join();
  for (size_t i = 0; i < slots.size(); ++i) {
    Slot& sl = slots[i];
    const std::string& file = opts.files[i];
    const std::string& entry = sl.entry;
    ParseStatus& ps = sl.ps;
    Codebase& unit = sl.unit;
    if (sl.failed) {
      err = sl.err;
      return false;
    }
    if (!sl.hit) {
      if (!entry.empty()) {
        json j;
        j["format"] = kFormat;
        j["file"] = file;
        json deps = json::array();
        for (auto& d : ps.deps) deps.push_back({d, fileHash(d)});
        if (std::find(ps.deps.begin(), ps.deps.end(), file) == ps.deps.end()) deps.push_back({file, fileHash(file)});
        j["deps"] = deps;
        j["errors"] = ps.errors;
        j["first_error"] = ps.firstError;
        json fns = json::array();
        for (auto& [k, f] : unit.functions) fns.push_back(f);
        j["functions"] = fns;
        std::string tmp = entry + ".tmp" + std::to_string(::getpid());
        {
          std::ofstream out(tmp, std::ios::binary);
          out << j.dump();
        }
        fs::rename(tmp, entry, ec);  // atomic: concurrent runs see the old entry or the new one
        if (ec) fs::remove(tmp, ec);
      }
    }
    out.push_back({std::move(ps), std::move(unit)});
  }
  // Models of edited units stay behind under their old key: drop entries nobody used for 30 days.
  if (!dir.empty() && std::any_of(slots.begin(), slots.end(), [](const Slot& sl) { return !sl.hit; })) {
    auto now = fs::file_time_type::clock::now();
    for (auto& e : fs::directory_iterator(dir, ec)) {
      std::error_code e2;
      auto t = fs::last_write_time(e.path(), e2);
      if (!e2 && now - t > std::chrono::hours(24 * 30)) fs::remove(e.path(), e2);
    }
  }
  return true;
}

void assembleUnits(const std::string& root, const std::vector<const UnitModel*>& units, Codebase& cb) {
  cb = Codebase();
  cb.root = root;
  for (const UnitModel* u : units) {
    cb.errors += u->status.errors;
    cb.parseStatus.push_back(u->status);
    cb.parsedFiles.push_back(u->status.file);
    for (auto& [k, f] : u->unit.functions) cb.functions.emplace(k, f);  // first unit wins (headers)
  }
  for (auto& ps : cb.parseStatus) {
    ps.functions = 0;
    for (auto& [k, f] : cb.functions)
      if (f.file == ps.file) ++ps.functions;
  }
}

bool parseWithCache(const ParseOptions& opts, const CacheOptions& cache, Codebase& cb, std::string& err) {
  std::vector<UnitModel> units;
  if (!parseUnits(opts, cache, units, err)) return false;
  std::vector<const UnitModel*> order;
  for (auto& u : units) order.push_back(&u);
  assembleUnits(opts.root, order, cb);
  return true;
}

}  // namespace m2v::review
