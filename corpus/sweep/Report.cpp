// Sweep reports (Markdown, TSV, JSON), the floor gate, precompiled module I/O and the shared command driver.
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <set>
#include <sstream>
#include <cstring>
#include <thread>

#include "Corpus.h"

namespace m2v::corpus {

namespace fs = std::filesystem;

namespace {

std::string jsonEscape(const std::string& s) {
  std::string o;
  for (char ch : s) {
    if (ch == '"' || ch == '\\') o += '\\', o += ch;
    else if (ch == '\n') o += "\\n";
    else if (ch == '\t') o += "\\t";
    else if (uint8_t(ch) < 0x20) o += ' ';
    else o += ch;
  }
  return o;
}
std::string tsvClean(std::string s) {
  for (char& ch : s)
    if (ch == '\t' || ch == '\n' || ch == '\r') ch = ' ';
  return s;
}
std::string mdClean(std::string s) {
  s = tsvClean(s);
  std::string o;
  for (char ch : s) {
    if (ch == '|') o += "\\|";
    else o += ch;
  }
  if (o.size() > 220) o = o.substr(0, 217) + "...";
  return o;
}
std::string num(double v, int prec = 4) {
  if (v < 0) return "-";
  std::ostringstream s;
  s << std::setprecision(prec) << v;
  return s.str();
}
std::string stem(const std::string& path) { return fs::path(path).stem().string(); }

// The signature of a message for grouping: quoted names and numbers removed.
std::string signature(const std::string& cause, const std::string& message) {
  std::string m;
  bool inQuote = false;
  for (char ch : message) {
    if (ch == '\'') {
      if (!inQuote) m += "'…'";
      inQuote = !inQuote;
      continue;
    }
    if (inQuote || std::isdigit(uint8_t(ch))) continue;
    m += ch;
  }
  for (const char* noise : {"in kernel '…': ", "kernel '…' "}) {
    size_t q;
    while ((q = m.find(noise)) != std::string::npos) m.erase(q, std::strlen(noise));
  }
  // Drop the "file:line:col: error: unsupported: " prefix of compiler diagnostics.
  size_t p = m.find("error: ");
  if (p != std::string::npos) m = m.substr(p + 7);
  if (m.rfind("unsupported: ", 0) == 0) m = m.substr(13);
  if (m.size() > 90) m = m.substr(0, 90);
  return cause + " | " + m;
}

double bandwidthGBs(const CaseResult& r) {
  if (!r.memoryBound || r.gpuUs <= 0 || r.stage < Stage::Ran) return -1;
  return r.bytesMoved / (r.gpuUs * 1e3);  // bytes per ns = GB/s
}

}  // namespace

void printSummary(const std::vector<CaseResult>& results, std::ostream& out) {
  int counts[kStageCount] = {};
  for (const CaseResult& r : results) counts[int(r.stage)]++;
  out << "sweep: " << results.size() << " kernels;";
  for (int s = 0; s < kStageCount; ++s) out << " " << stageName(Stage(s)) << " " << counts[s];
  int refusedCount = 0;
  for (const CaseResult& r : results) refusedCount += r.cause.rfind("refused", 0) == 0;
  out << " (refused by device: " << refusedCount << ")\n";
}

bool writeReports(const std::string& prefix, const std::vector<CaseResult>& results, const SweepMeta& meta,
                  std::string& error) {
  if (fs::path(prefix).has_parent_path()) {
    std::error_code ec;
    fs::create_directories(fs::path(prefix).parent_path(), ec);
  }
  int counts[kStageCount] = {};
  for (const CaseResult& r : results) counts[int(r.stage)]++;
  // Failure groups.
  struct Group {
    std::string cause, first, firstKernel;
    std::vector<std::string> kernels;
  };
  std::map<std::string, Group> groups;
  for (const CaseResult& r : results) {
    if (r.stage == Stage::Matched) continue;
    Group& g = groups[signature(r.cause, r.message)];
    if (g.kernels.empty()) g.cause = r.cause, g.first = r.message, g.firstKernel = r.name;
    g.kernels.push_back(r.name);
  }
  std::vector<const Group*> ordered;
  for (auto& [k, g] : groups) ordered.push_back(&g);
  std::stable_sort(ordered.begin(), ordered.end(), [](const Group* a, const Group* b) {
    return a->kernels.size() > b->kernels.size();
  });

  // Markdown.
  {
    std::ofstream md(prefix + ".md");
    md << "# metal2vk corpus sweep\n\n";
    md << "- date: " << meta.date << "\n- device: " << meta.device << "\n- driver: " << meta.driver
       << "\n- tool: " << meta.tool << " (jobs " << meta.jobs << ")\n- corpus: " << meta.corpusDir
       << "\n- seed: " << meta.seed << " (per-kernel seeds in the TSV/JSON)\n- wall time: " << num(meta.wallSeconds, 3)
       << " s\n\n";
    md << "## Furthest stage reached\n\n| stage | kernels |\n|---|---|\n";
    for (int s = 0; s < kStageCount; ++s) md << "| " << stageName(Stage(s)) << " | " << counts[s] << " |\n";
    md << "| **total** | " << results.size() << " |\n\n";
    int refusedCount = 0;
    for (const CaseResult& r : results) refusedCount += r.cause.rfind("refused", 0) == 0;
    md << "Of the kernels at \"valid\", " << refusedCount
       << " were refused by the device (a capability the device lacks, e.g. 32-wide subgroups; not a failure of the "
          "kernel or the compiler).\n\n";
    md << "Stages: none = front end failed; parse = lowering failed; IR = SPIR-V emission failed; SPIR-V = emitted "
          "but failed validation; valid = a valid module that did not run (refused by the device or a runtime "
          "error); ran = ran but did not match the CPU reference; matched = within tolerance.\n\n";
    md << "## Failures by cause\n\n| cause | kernels | first message (first kernel) |\n|---|---|---|\n";
    for (const Group* g : ordered) {
      std::string ks;
      for (size_t i = 0; i < g->kernels.size(); ++i) ks += (i ? ", " : "") + g->kernels[i];
      md << "| " << mdClean(g->cause) << " | " << g->kernels.size() << ": " << mdClean(ks) << " | "
         << mdClean(g->first) << " (" << g->firstKernel << ") |\n";
    }
    if (meta.ceilingGBs > 0) md << "\nBandwidth ceiling for the fraction column: " << meta.ceilingGBs << " GB/s.\n";
    md << "\n## Kernels\n\n| kernel | entry | stage | compile ms | GPU µs | GB/s | of ceiling | max error | tolerance | cause |\n"
          "|---|---|---|---|---|---|---|---|---|---|\n";
    for (const CaseResult& r : results)
      md << "| " << r.name << " | " << r.entry << " | " << stageName(r.stage) << " | " << num(r.compileMs) << " | "
         << num(r.gpuUs) << " | " << num(bandwidthGBs(r)) << " | "
         << (meta.ceilingGBs > 0 && bandwidthGBs(r) > 0 ? num(bandwidthGBs(r) / meta.ceilingGBs, 3) : "-") << " | "
         << num(r.maxError, 3) << " | "
         << num(r.tolerance, 2) << " | " << mdClean(r.cause) << " |\n";
  }
  // TSV.
  {
    std::ofstream tsv(prefix + ".tsv");
    tsv << "kernel\tsource\tentry\tdtype\tstage\tcompile_ms\tgpu_us\tbytes_moved\tbandwidth_gbs\tmax_error\ttolerance"
           "\tseed\tcause\tmessage\n";
    for (const CaseResult& r : results)
      tsv << r.name << "\t" << stem(r.source) << "\t" << r.entry << "\t" << r.dtype << "\t" << stageName(r.stage)
          << "\t" << num(r.compileMs, 6) << "\t" << num(r.gpuUs, 6) << "\t" << (r.memoryBound ? num(r.bytesMoved, 12) : "-")
          << "\t" << num(bandwidthGBs(r), 6) << "\t" << num(r.maxError, 4) << "\t" << num(r.tolerance, 3) << "\t"
          << r.seed << "\t" << tsvClean(r.cause) << "\t" << tsvClean(r.message) << "\n";
  }
  // JSON.
  {
    std::ofstream js(prefix + ".json");
    js << "{\n  \"date\": \"" << jsonEscape(meta.date) << "\", \"device\": \"" << jsonEscape(meta.device)
       << "\", \"driver\": \"" << jsonEscape(meta.driver) << "\", \"tool\": \"" << meta.tool << "\", \"seed\": "
       << meta.seed << ", \"wall_s\": " << meta.wallSeconds << ", \"ceiling_gbs\": " << meta.ceilingGBs << ",\n  \"counts\": {";
    for (int s = 0; s < kStageCount; ++s) js << (s ? ", " : "") << "\"" << stageName(Stage(s)) << "\": " << counts[s];
    js << "},\n  \"failure_groups\": [";
    for (size_t i = 0; i < ordered.size(); ++i) {
      js << (i ? "," : "") << "\n    {\"cause\": \"" << jsonEscape(ordered[i]->cause) << "\", \"first_message\": \""
         << jsonEscape(ordered[i]->first) << "\", \"kernels\": [";
      for (size_t k = 0; k < ordered[i]->kernels.size(); ++k)
        js << (k ? ", " : "") << "\"" << ordered[i]->kernels[k] << "\"";
      js << "]}";
    }
    js << "\n  ],\n  \"kernels\": [";
    for (size_t i = 0; i < results.size(); ++i) {
      const CaseResult& r = results[i];
      auto jnum = [](double v) { return v < 0 || !std::isfinite(v) ? std::string("null") : num(v, 8); };
      js << (i ? "," : "") << "\n    {\"kernel\": \"" << r.name << "\", \"source\": \"" << stem(r.source)
         << "\", \"entry\": \"" << r.entry << "\", \"dtype\": \"" << r.dtype << "\", \"stage\": \""
         << stageName(r.stage) << "\", \"compile_ms\": " << jnum(r.compileMs) << ", \"gpu_us\": " << jnum(r.gpuUs)
         << ", \"bytes_moved\": " << (r.memoryBound ? jnum(r.bytesMoved) : "null")
         << ", \"bandwidth_gbs\": " << jnum(bandwidthGBs(r)) << ", \"max_error\": "
         << (std::isinf(r.maxError) ? std::string("\"inf\"") : jnum(r.maxError)) << ", \"tolerance\": "
         << jnum(r.tolerance) << ", \"seed\": " << r.seed << ", \"cause\": \"" << jsonEscape(r.cause)
         << "\", \"message\": \"" << jsonEscape(r.message) << "\"}";
    }
    js << "\n  ]\n}\n";
    if (!js) return error = "cannot write " + prefix + ".json", false;
  }
  return true;
}

std::vector<std::string> checkFloor(const std::string& floorFile, const std::vector<CaseResult>& results,
                                    std::string& error) {
  std::vector<std::string> missing;
  std::ifstream in(floorFile);
  if (!in) {
    error = "cannot read floor file " + floorFile;
    return missing;
  }
  std::map<std::string, const CaseResult*> byName;
  for (const CaseResult& r : results) byName[r.name] = &r;
  std::string line;
  while (std::getline(in, line)) {
    line = line.substr(0, line.find('#'));
    std::istringstream ws(line);
    std::string name;
    if (!(ws >> name)) continue;
    auto it = byName.find(name);
    if (it == byName.end()) missing.push_back(name + ": not in the sweep");
    else if (it->second->stage != Stage::Matched)
      missing.push_back(name + ": reached " + stageName(it->second->stage) + " (" + it->second->cause + ": " +
                        it->second->message + ")");
  }
  return missing;
}

// --- precompiled modules ---------------------------------------------------------------------------------------
bool writeModules(const std::string& dir, const Modules& modules, std::string& error) {
  std::error_code ec;
  fs::create_directories(dir, ec);
  std::ofstream status(dir + "/compile.tsv");
  status << "source\tentry\tstage\tcompile_ms\tcause\tmessage\n";
  for (auto& [key, e] : modules) {
    std::string source = key.substr(0, key.find('\n')), entry = key.substr(key.find('\n') + 1);
    status << stem(source) << "\t" << entry << "\t" << stageName(e.stage) << "\t" << e.compileMs << "\t"
           << tsvClean(e.cause) << "\t" << tsvClean(e.message) << "\n";
    if (e.stage < Stage::Valid) continue;
    fs::create_directories(dir + "/" + stem(source), ec);
    std::string base = dir + "/" + stem(source) + "/" + entry;
    std::ofstream spv(base + ".spv", std::ios::binary);
    spv.write(reinterpret_cast<const char*>(e.spirv.data()), std::streamsize(e.spirv.size() * 4));
    std::ofstream(base + ".json") << toJson(e.reflection) << "\n";
    if (!spv) return error = "cannot write " + base + ".spv", false;
  }
  if (!status) return error = "cannot write " + dir + "/compile.tsv", false;
  return true;
}

bool readModules(const std::string& dir, const std::vector<Case>& cases, Modules& modules, std::string& error) {
  std::map<std::string, std::vector<std::string>> status;  // stem\nentry -> fields
  std::ifstream in(dir + "/compile.tsv");
  std::string line;
  bool header = true;
  while (std::getline(in, line)) {
    if (header) { header = false; continue; }
    std::vector<std::string> f;
    std::stringstream ss(line);
    std::string field;
    while (std::getline(ss, field, '\t')) f.push_back(field);
    if (f.size() >= 4) status[f[0] + "\n" + f[1]] = f;
  }
  for (const Case& c : cases) {
    std::string key = moduleKey(c.source, c.entry);
    if (modules.count(key)) continue;
    CompiledEntry e;
    auto st = status.find(stem(c.source) + "\n" + c.entry);
    if (st != status.end()) {
      const auto& f = st->second;
      e.compileMs = std::strtod(f[3].c_str(), nullptr);
      for (int s = 0; s < kStageCount; ++s)
        if (f[2] == stageName(Stage(s))) e.stage = Stage(s);
      if (f.size() > 4) e.cause = f[4];
      if (f.size() > 5) e.message = f[5];
    }
    std::string base = dir + "/" + stem(c.source) + "/" + c.entry;
    std::ifstream spv(base + ".spv", std::ios::binary), js(base + ".json");
    if (spv && js) {
      std::string bytes((std::istreambuf_iterator<char>(spv)), std::istreambuf_iterator<char>());
      e.spirv.resize(bytes.size() / 4);
      std::memcpy(e.spirv.data(), bytes.data(), e.spirv.size() * 4);
      std::string text((std::istreambuf_iterator<char>(js)), std::istreambuf_iterator<char>()), err;
      auto r = reflectionFromJson(text, &err);
      if (!r) {
        e.stage = Stage::SpirV;
        e.cause = "module: bad reflection";
        e.message = err;
      } else {
        e.reflection = *r;
        e.stage = Stage::Valid;
      }
    } else if (st == status.end()) {
      e.stage = Stage::None;
      e.cause = "not compiled";
      e.message = "no precompiled module " + base + ".spv";
    }
    modules[key] = std::move(e);
  }
  (void)error;
  return true;
}

// --- shared driver ---------------------------------------------------------------------------------------------
int sweepMain(const std::string& tool, const std::vector<std::string>& args, CompileFn compile, KernelFn makeKernel) {
  std::string dir, device, reportPrefix, filter, floorFile, modulesIn, emitDir;
  int jobs = int(std::max(1u, std::thread::hardware_concurrency()));
  RunOptions ro;
  ro.makeKernel = std::move(makeKernel);
  bool compileOnly = false;
  double ceiling = 0;
  auto usage = [&](const std::string& m) {
    std::cerr << tool << ": " << m << "\nusage: " << tool
              << " DIR [-j N] [--device SEL] [--report PREFIX] [--filter SUBSTR] [--floor FILE] [--seed S]"
                 " [--repeat N] [--warmup-ms MS] [--ceiling-gbs GBS]"
              << (compile ? " [--emit-modules DIR] [--compile-only] [--modules DIR]" : " --modules DIR") << "\n";
    return 2;
  };
  for (size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto next = [&]() -> const std::string* { return i + 1 < args.size() ? &args[++i] : nullptr; };
    const std::string* v = nullptr;
    if (a == "-j" || a == "--device" || a == "--report" || a == "--filter" || a == "--floor" || a == "--seed" ||
        a == "--repeat" || a == "--warmup-ms" || a == "--modules" || a == "--emit-modules" || a == "--ceiling-gbs") {
      if (!(v = next())) return usage(a + " needs a value");
      if (a == "-j") jobs = std::max(1, std::atoi(v->c_str()));
      else if (a == "--device") device = *v;
      else if (a == "--report") reportPrefix = *v;
      else if (a == "--filter") filter = *v;
      else if (a == "--floor") floorFile = *v;
      else if (a == "--seed") ro.seed = std::strtoull(v->c_str(), nullptr, 0);
      else if (a == "--repeat") ro.repeat = std::atoi(v->c_str());
      else if (a == "--warmup-ms") ro.warmupMs = std::max(0, std::atoi(v->c_str()));
      else if (a == "--modules") modulesIn = *v;
      else if (a == "--emit-modules") emitDir = *v;
      else if (a == "--ceiling-gbs") ceiling = std::strtod(v->c_str(), nullptr);
    } else if (a.rfind("-j", 0) == 0 && a.size() > 2) {
      jobs = std::max(1, std::atoi(a.c_str() + 2));
    } else if (a == "--compile-only") {
      compileOnly = true;
    } else if (!a.empty() && a[0] == '-') {
      return usage("unknown option '" + a + "'");
    } else if (dir.empty()) {
      dir = a;
    } else {
      return usage("more than one corpus directory");
    }
  }
  if (dir.empty()) return usage("no corpus directory");
  if (!compile && modulesIn.empty()) return usage("--modules DIR is required (this tool does not compile)");
  ro.device = device;
  ro.progress = isatty(2);

  auto start = std::chrono::steady_clock::now();
  std::vector<std::string> errors;
  std::vector<Case> cases = loadCorpus(dir, filter, errors);
  for (const std::string& e : errors) std::cerr << e << "\n";
  if (!errors.empty()) return 1;
  if (cases.empty()) {
    std::cerr << tool << ": no cases in " << dir << (filter.empty() ? "" : " matching '" + filter + "'") << "\n";
    return 1;
  }
  std::cerr << tool << ": " << cases.size() << " kernels from " << dir << "\n";

  Modules modules;
  std::string error;
  if (!modulesIn.empty()) {
    readModules(modulesIn, cases, modules, error);
  } else {
    modules = compile(cases, jobs, ro.progress, std::cerr);
  }
  if (!emitDir.empty()) {
    if (!writeModules(emitDir, modules, error)) return std::cerr << tool << ": " << error << "\n", 1;
    std::cerr << tool << ": modules written to " << emitDir << "\n";
  }
  if (compileOnly) return 0;

  SweepMeta meta;
  meta.tool = tool;
  meta.jobs = jobs;
  meta.corpusDir = dir;
  meta.ceilingGBs = ceiling;
  std::vector<CaseResult> results;
  try {
    results = runCases(cases, modules, ro, meta, std::cerr);
  } catch (const std::exception& e) {
    std::cerr << tool << ": " << e.what() << "\n";
    return 5;
  }
  meta.wallSeconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::time_t now = std::time(nullptr);
  char date[64];
  std::strftime(date, sizeof date, "%Y-%m-%d %H:%M:%S UTC", std::gmtime(&now));
  meta.date = date;
  for (const CaseResult& r : results)
    if (r.stage != Stage::Matched)
      std::cout << "  " << std::left << std::setw(34) << r.name << " " << std::setw(8) << stageName(r.stage) << " "
                << r.cause << ": " << r.message.substr(0, 160) << "\n";
  printSummary(results, std::cout);
  std::cout << "seed " << meta.seed << " (rerun with --seed " << meta.seed << ")\n";
  if (!reportPrefix.empty()) {
    if (!writeReports(reportPrefix, results, meta, error)) return std::cerr << tool << ": " << error << "\n", 1;
    std::cout << "report: " << reportPrefix << ".md .tsv .json\n";
  }
  if (!floorFile.empty()) {
    std::vector<std::string> missing = checkFloor(floorFile, results, error);
    if (!error.empty()) return std::cerr << tool << ": " << error << "\n", 1;
    if (!missing.empty()) {
      std::cout << "FLOOR FAILED: " << missing.size() << " kernel(s) of " << floorFile
                << " no longer reach \"matched\":\n";
      for (const std::string& m : missing) std::cout << "  " << m << "\n";
      return 1;
    }
    std::cout << "floor ok (" << floorFile << ")\n";
  }
  return 0;
}

}  // namespace m2v::corpus
