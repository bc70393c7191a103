// Test driver for m2v review: recall/precision on the seeded fixture backend, one test per target kind, CLI
// contract (exit codes). Usage: review_tests MODE FIXTURE_ROOT [ARG]
#include <unistd.h>
#include <array>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <nlohmann/json.hpp>
#include <sstream>
#include <string>
#include <vector>

#include "metal2vk/review.h"

namespace fs = std::filesystem;
using nlohmann::json;

static int failures = 0;
#define EXPECT_TRUE(c, msg)                                    \
  do {                                                         \
    if (!(c)) {                                                \
      std::cerr << "FAIL " << __LINE__ << ": " << msg << "\n"; \
      ++failures;                                              \
    }                                                          \
  } while (0)

static int review(std::vector<std::string> args, json& j, std::string* text = nullptr) {
  std::ostringstream out, err;
  int rc = m2v::runReviewCli(args, out, err);
  if (text) *text = out.str() + err.str();
  if (rc == 0 || rc == 1) {
    try {
      j = json::parse(out.str());
    } catch (...) {
      j = json();
    }
  }
  if (!err.str().empty()) std::cerr << err.str();
  return rc;
}

static bool endsWith(const std::string& s, const std::string& t) {
  return s.size() >= t.size() && s.compare(s.size() - t.size(), t.size(), t) == 0;
}

// The finding's line, or one of the other lines it groups as the same path (one finding per hazard).
static bool atLine(const json& f, const json& line) {
  if (f["line"] == line) return true;
  if (f.contains("also_lines"))
    for (auto& l : f["also_lines"])
      if (l == line) return true;
  return false;
}

static bool matches(const json& f, const json& e) {
  return f["file"] == e["file"] && atLine(f, e["line"]) && f["check"] == e["check"] &&
         f["severity"] == e["severity"] &&
         endsWith(f["function"].get<std::string>(), e["function"].get<std::string>()) &&
         f["trigger"].get<std::string>().find(e["trigger"].get<std::string>()) != std::string::npos;
}

// Recall and precision over the whole fixture backend (optionally one check).
static int recall(const std::string& root, const std::string& only, const std::string& target = "mlx/backend/vulkan",
                  size_t minSeeded = 25) {
  std::ifstream in(root + "/expected.json");
  json spec = json::parse(in);
  json j;
  int rc = review({"--root", root, target, "--json"}, j);
  EXPECT_TRUE(rc == 0, "review ran");
  std::vector<json> expected, findings;
  for (auto& e : spec["expected"])
    if (only.empty() || e["check"] == only) expected.push_back(e);
  for (auto& f : j["findings"])
    if (only.empty() || f["check"] == only) findings.push_back(f);
  size_t found = 0, correct = 0;
  for (auto& e : expected) {
    bool hit = false;
    for (auto& f : findings) hit = hit || matches(f, e);
    if (hit)
      ++found;
    else {
      std::cerr << "MISSED " << e.dump() << "\n";
      for (auto& f : findings)
        if (f["file"] == e["file"] && f["line"] == e["line"])
          std::cerr << "  reported there instead: " << f["check"] << " " << f["severity"] << " " << f["function"]
                    << " trigger: " << f["trigger"] << "\n";
    }
  }
  for (auto& f : findings) {
    bool ok = false;
    for (auto& e : expected) ok = ok || matches(f, e);
    if (ok)
      ++correct;
    else
      std::cerr << "UNEXPECTED " << f["check"] << " " << f["severity"] << " " << f["location"] << " " << f["problem"]
                << "\n";
  }
  for (auto& n : spec["near_misses"])
    for (auto& f : j["findings"])
      EXPECT_TRUE(!(f["file"] == n["file"] && atLine(f, n["line"])),
                  "near miss reported: " << n["file"] << ":" << n["line"] << " " << n["what"]);
  for (auto& c : spec["clean_files"])
    for (auto& f : j["findings"]) EXPECT_TRUE(f["file"] != c, "finding in fixed variant " << f["location"]);
  // every near miss that the checks look at should be explained under Non-issues (reported, not flagged)
  size_t explained = 0;
  for (auto& n : spec["near_misses"])
    for (auto& x : j["non_issues"])
      if (x["file"] == n["file"] && x["line"] == n["line"]) {
        ++explained;
        break;
      }
  double r = expected.empty() ? 1.0 : double(found) / expected.size();
  double p = findings.empty() ? 1.0 : double(correct) / findings.size();
  std::cout << "review fixture" << (only.empty() ? "" : " [" + only + "]") << ": seeded " << expected.size()
            << ", found " << found << ", reported " << findings.size() << ", correct " << correct << "; recall " << r
            << ", precision " << p << "; near misses " << spec["near_misses"].size()
            << " (explained as non-issues: " << explained << ")\n";
  // per hazard class (check): recall over the seeded hazards, precision over what was reported
  std::map<std::string, std::array<size_t, 4>> per;  // expected, found, reported, correct
  for (auto& e : expected) {
    auto& c = per[e["check"]];
    ++c[0];
    for (auto& f : findings)
      if (matches(f, e)) {
        ++c[1];
        break;
      }
  }
  for (auto& f : findings) {
    auto& c = per[f["check"]];
    ++c[2];
    for (auto& e : expected)
      if (matches(f, e)) {
        ++c[3];
        break;
      }
  }
  for (auto& [check, c] : per)
    std::cout << "  " << check << ": seeded " << c[0] << ", found " << c[1] << ", reported " << c[2] << ", correct "
              << c[3] << "\n";
  EXPECT_TRUE(found == expected.size(), "recall must be 1");
  EXPECT_TRUE(correct == findings.size(), "precision must be 1");
  if (only.empty()) EXPECT_TRUE(expected.size() >= minSeeded, "at least " << minSeeded << " seeded hazards");
  return failures;
}

static bool hasFinding(const json& j, const std::string& file, int line) {
  for (auto& f : j["findings"])
    if (f["file"] == file && atLine(f, line)) return true;
  return false;
}

static int lineOf(const std::string& root, const std::string& file, const std::string& needle) {
  std::ifstream in(root + "/" + file);
  std::string l;
  for (int n = 1; std::getline(in, l); ++n)
    if (l.find(needle) != std::string::npos) return n;
  return -1;
}

static int targets(const std::string& root, const std::string& mode) {
  json j;
  const std::string hs = "mlx/backend/vulkan/host_sync.cpp", cx = "mlx/backend/vulkan/cpu_extraction.cpp",
                    cp = "mlx/backend/vulkan/copies.cpp", sb = "mlx/backend/vulkan/submit.cpp";
  if (mode == "file") {
    EXPECT_TRUE(review({"--root", root, hs, "--json"}, j) == 0, "ran");
    EXPECT_TRUE(j["scope"]["target"]["kind"] == "file", "kind file");
    EXPECT_TRUE(j["findings"].size() == 8, "8 findings in host_sync.cpp, got " << j["findings"].size());
    for (auto& f : j["findings"]) EXPECT_TRUE(f["file"] == hs, "finding outside the file " << f["location"]);
    EXPECT_TRUE(j["summary"]["high"] == 7, "7 high");
    std::string md;
    review({"--root", root, hs}, j, &md);
    size_t a = md.find("## Scope"), b = md.find("## Findings"), c = md.find("## Non-issues"), d = md.find("## Summary");
    EXPECT_TRUE(a < b && b < c && c < d && d != std::string::npos, "sections in order");
    for (auto key : {"Severity:", "Location:", "Problem:", "Why it hurts:", "Trigger:", "Recommended direction:"})
      EXPECT_TRUE(md.find(key) != std::string::npos, "markdown has " << key);
    review({"--root", root, "mlx/backend/vulkan/fixed.cpp"}, j, &md);
    EXPECT_TRUE(md.find("No findings.") != std::string::npos, "explicit no findings");
  } else if (mode == "function") {
    EXPECT_TRUE(review({"--root", root, "Conv::eval_gpu", "--json"}, j) == 0, "ran");
    EXPECT_TRUE(j["scope"]["target"]["kind"] == "function", "kind function");
    EXPECT_TRUE(j["findings"].size() == 1, "one finding");
    if (j["findings"].size() == 1) {
      auto& f = j["findings"][0];
      EXPECT_TRUE(f["line"] == lineOf(root, hs, "s.device.synchronize()"), "at the hazard in the second helper");
      EXPECT_TRUE(f["chain"].size() == 3, "chain eval_gpu -> run_conv -> finish_stream");
      EXPECT_TRUE(f["trigger"].get<std::string>().find("groups_ > 1") != std::string::npos &&
                      f["trigger"].get<std::string>().find("`flip`") != std::string::npos,
                  "trigger across the chain");
    }
    bool listed = false;
    for (auto& fn : j["scope"]["functions"]) listed = listed || fn["function"] == "mlx::core::finish_stream";
    EXPECT_TRUE(listed, "followed callee listed in scope");
  } else if (mode == "class") {
    EXPECT_TRUE(review({"--root", root, "Gather", "--json"}, j) == 0, "ran");
    EXPECT_TRUE(j["scope"]["target"]["kind"] == "class", "kind class");
    EXPECT_TRUE(hasFinding(j, cx, lineOf(root, cx, "int i = indices.item<int>()")), "helper finding via the class");
    EXPECT_TRUE(j["findings"].size() == 1, "only Gather's finding");
  } else if (mode == "confidence") {
    // severity, then confidence: findings whose reachability is not established come last, each with a one-sentence
    // trigger (no call chain); every finding names its confidence
    EXPECT_TRUE(review({"--root", root, "mlx/backend/vulkan", "--json"}, j) == 0, "ran");
    bool unprovenSeen = false;
    size_t unproven = 0;
    for (auto& f : j["findings"]) {
      bool proven = f["confidence"] == "reachable";
      EXPECT_TRUE(!(proven && unprovenSeen), "proven finding after an unproven one: " << f["location"]);
      unprovenSeen = unprovenSeen || !proven;
      if (!proven) {
        ++unproven;
        std::string t = f["trigger"].get<std::string>();
        EXPECT_TRUE(t.find(" -> ") == std::string::npos && t.rfind("Reachability not established", 0) == 0,
                    "one-sentence trigger for an unproven finding: " << t);
      }
    }
    EXPECT_TRUE(unproven > 0, "the fixture has findings with unproven reachability");
  } else if (mode == "symbol") {
    EXPECT_TRUE(review({"--root", root, "Add::eval_gpu", "--json"}, j) == 0, "ran");
    EXPECT_TRUE(j["scope"]["target"]["kind"] == "symbol", "several matches");
    EXPECT_TRUE(j["scope"]["target"]["matches"].size() == 2, "both listed");
    for (auto& f : j["findings"]) EXPECT_TRUE(f["file"] == cx, "only the Vulkan match reviewed: " << f["location"]);
    // the three host reads of the scalar fast path are one path: one finding naming all three lines
    EXPECT_TRUE(j["findings"].size() == 1 && j["findings"][0]["also_lines"].size() == 2,
                "one scalar fast path finding with its three lines");
  } else if (mode == "diff") {
    int l = lineOf(root, cp, "auto y32 = multiply(x32, x32, s);");
    fs::path tmp = fs::temp_directory_path() / "m2v_review_test.diff";
    std::ofstream(tmp) << "--- a/" << cp << "\n+++ b/" << cp << "\n@@ -" << l << ",1 +" << l << ",1 @@\n"
                       << "-  auto y32 = x32;\n+  auto y32 = multiply(x32, x32, s);\n";
    EXPECT_TRUE(review({"--root", root, "--diff", tmp.string(), "--json"}, j) == 0, "ran");
    EXPECT_TRUE(j["scope"]["target"]["kind"] == "diff", "kind diff");
    EXPECT_TRUE(j["findings"].size() == 2, "RMSNorm's two findings, got " << j["findings"].size());
    for (auto& f : j["findings"]) EXPECT_TRUE(f["function"] == "mlx::core::RMSNorm::eval_gpu", "only RMSNorm");
    fs::remove(tmp);
  } else if (mode == "commit") {
    fs::path repo = fs::temp_directory_path() / ("m2v_review_repo_" + std::to_string(::getpid()));
    fs::remove_all(repo);
    fs::create_directories(repo);
    fs::copy(root, repo, fs::copy_options::recursive);
    std::string g = "cd '" + repo.string() + "' && git -c init.defaultBranch=main init -q && git add -A && " +
                    "git -c user.name=t -c user.email=t@t commit -qm base";
    EXPECT_TRUE(std::system(g.c_str()) == 0, "git base commit");
    // second commit: touch Multiply::eval_gpu only
    std::ifstream in(repo / sb);
    std::stringstream ss;
    ss << in.rdbuf();
    std::string text = ss.str();
    auto pos = text.find("  d.submit(s.index);");
    text.insert(pos, "  // flush so the result is visible\n");
    in.close();
    std::ofstream(repo / sb) << text;
    g = "cd '" + repo.string() + "' && git -c user.name=t -c user.email=t@t commit -qam change";
    EXPECT_TRUE(std::system(g.c_str()) == 0, "git change commit");
    EXPECT_TRUE(review({"--root", repo.string(), "--commit", "HEAD", "--json"}, j) == 0, "ran --commit");
    EXPECT_TRUE(j["scope"]["target"]["kind"] == "commit", "kind commit");
    EXPECT_TRUE(j["findings"].size() == 1 && j["findings"][0]["function"] == "mlx::core::Multiply::eval_gpu",
                "the touched function's finding");
    json r;
    EXPECT_TRUE(review({"--root", repo.string(), "HEAD~1..HEAD", "--json"}, r) == 0, "ran range");
    EXPECT_TRUE(r["findings"] == j["findings"], "range equals commit");
    fs::remove_all(repo);
  } else if (mode == "cli") {
    std::string t;
    EXPECT_TRUE(review({"--root", root, hs, "--fail-on", "high"}, j, &t) == 1, "--fail-on high fails on high");
    EXPECT_TRUE(review({"--root", root, "mlx/backend/vulkan/fixed.cpp", "--fail-on", "low"}, j, &t) == 0,
                "clean passes");
    EXPECT_TRUE(review({"--root", root}, j, &t) == 2, "usage error");
    EXPECT_TRUE(review({"--root", root, "NoSuchThing"}, j, &t) == 2, "unknown target");
    EXPECT_TRUE(review({"--root", root + "/nope", "x"}, j, &t) == 2, "bad root");
    EXPECT_TRUE(review({"--root", root, hs, "--config", "/nonexistent.json"}, j, &t) == 2, "bad config");
    // config can change a severity and disable a check
    fs::path cfg = fs::temp_directory_path() / "m2v_review_cfg.json";
    std::ofstream(cfg) << R"({"severity": {"host-sync": "low"}, "disabled_checks": ["cb-break"]})";
    EXPECT_TRUE(review({"--root", root, hs, "--json", "--config", cfg.string()}, j) == 0, "ran with config");
    for (auto& f : j["findings"]) {
      EXPECT_TRUE(f["check"] != "cb-break", "disabled check silent");
      if (f["check"] == "host-sync") EXPECT_TRUE(f["severity"] == "low", "severity from config");
    }
    fs::remove(cfg);
  } else {
    std::cerr << "unknown mode " << mode << "\n";
    return 2;
  }
  if (!failures) std::cout << "target " << mode << ": ok\n";
  return failures;
}

// The on-disk model cache: a second run reuses every unit and reports the same; editing a header the units read
// makes them parse again.
static int cache(const std::string& root) {
  fs::path tmp = fs::temp_directory_path() / ("m2v-review-cache-test-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  fs::create_directories(tmp / "tree");
  fs::copy(root, tmp / "tree", fs::copy_options::recursive);
  std::string tree = (tmp / "tree").string(), dir = (tmp / "cache").string();
  auto run = [&](json& j) { return review({"--root", tree, "mlx/backend/vulkan", "--json", "--cache-dir", dir}, j); };
  json a, b, c;
  EXPECT_TRUE(run(a) == 0 && run(b) == 0, "ran twice");
  EXPECT_TRUE(a["findings"] == b["findings"] && a["non_issues"] == b["non_issues"], "same report from the cache");
  size_t cachedA = 0, cachedB = 0;
  for (auto& p : a["scope"]["parse_status"]) cachedA += p["cached"].get<bool>();
  for (auto& p : b["scope"]["parse_status"]) cachedB += p["cached"].get<bool>();
  EXPECT_TRUE(cachedA == 0, "first run parses every unit");
  EXPECT_TRUE(cachedB == b["scope"]["parse_status"].size() && cachedB > 0, "second run reuses every unit");
  {
    std::ofstream h(tmp / "tree" / "mlx" / "ops.h", std::ios::app);
    h << "// edited\n";
  }
  EXPECT_TRUE(run(c) == 0, "ran after the edit");
  size_t reparsed = 0;
  for (auto& p : c["scope"]["parse_status"]) reparsed += !p["cached"].get<bool>();
  EXPECT_TRUE(reparsed > 0 && reparsed < c["scope"]["parse_status"].size(),
              "units that read mlx/ops.h parse again, the others come from the cache (" << reparsed << ")");
  EXPECT_TRUE(a["findings"] == c["findings"], "a comment changes no finding");
  fs::remove_all(tmp);
  std::cout << "cache: " << cachedB << " unit(s) reused, " << reparsed << " re-parsed after a header edit\n";
  return failures;
}

// An entry target parses only the units it reaches, and reports what a full parse reports.
static int partial(const std::string& root) {
  for (std::string t : {"Gather::eval_gpu", "ScaledDotProductAttention::eval_gpu", "Reduce::eval_gpu"}) {
    json p, f;
    EXPECT_TRUE(review({"--root", root, t, "--json", "--no-cache"}, p) == 0, "ran " << t);
    EXPECT_TRUE(review({"--root", root, t, "--json", "--no-cache", "--full-parse"}, f) == 0, "ran full " << t);
    auto strip = [](json fs) {
      for (auto& x : fs) x.erase("also_from");
      return fs;
    };
    EXPECT_TRUE(strip(p["findings"]) == strip(f["findings"]) && p["non_issues"] == f["non_issues"],
                "same findings and non-issues for " << t);
    EXPECT_TRUE(p["scope"]["parse_status"].size() < f["scope"]["parse_status"].size(),
                "fewer units parsed for " << t << ": " << p["scope"]["parse_status"].size());
    std::cout << t << ": " << p["scope"]["parse_status"].size() << " of " << f["scope"]["parse_status"].size()
              << " units, " << p["findings"].size() << " findings\n";
  }
  return failures;
}

// The outside headers are parsed once into a precompiled prefix that every unit loads: the report is the one each
// unit parsing its own headers gives. A tree that defines a macro the outside headers name, or tests one they define
// before including any, gets no prefix (and the same report).
static int prefix(const std::string& root) {
  fs::path tmp = fs::temp_directory_path() / ("m2v-review-prefix-test-" + std::to_string(::getpid()));
  fs::remove_all(tmp);
  auto pchs = [](const fs::path& dir) {
    size_t n = 0;
    std::error_code ec;
    for (auto& e : fs::directory_iterator(dir, ec)) n += e.path().extension() == ".pch";
    return n;
  };
  auto compare = [&](const std::string& tree, const std::string& what, size_t wantPch) {
    std::string with = (tmp / (what + "-with")).string(), without = (tmp / (what + "-without")).string();
    json a, b;
    EXPECT_TRUE(review({"--root", tree, "mlx/backend/vulkan", "--json", "--cache-dir", with}, a) == 0, "ran " << what);
    EXPECT_TRUE(review({"--root", tree, "mlx/backend/vulkan", "--json", "--cache-dir", without, "--no-prefix"}, b) == 0,
                "ran " << what << " without a prefix");
    EXPECT_TRUE(a.is_object() && !a["findings"].empty(), "findings to compare for " << what);
    EXPECT_TRUE(a == b, "the same report with and without the prefix for " << what);
    EXPECT_TRUE(pchs(with) == wantPch, what << ": " << pchs(with) << " precompiled prefix(es), want " << wantPch);
    EXPECT_TRUE(pchs(without) == 0, what << ": none with --no-prefix");
    std::cout << what << ": " << a["findings"].size() << " findings, " << pchs(with) << " prefix\n";
  };
  compare(root, "as-is", 1);
  // Copies of the tree whose first unit defines a macro libstdc++ reads, or tests one <cstdlib> defines first.
  std::string first;
  for (auto& e : fs::recursive_directory_iterator(fs::path(root) / "mlx" / "backend" / "vulkan"))
    if (e.path().extension() == ".cpp" && (first.empty() || e.path().string() < first)) first = e.path().string();
  std::string rel = fs::relative(first, root).string();
  for (auto [what, line] : {std::pair<std::string, std::string>{"tree-macro", "#define _GLIBCXX_ASSERTIONS 1\n"},
                            {"early-test", "#ifdef EXIT_SUCCESS\n#endif\n"}}) {
    fs::path tree = tmp / ("tree-" + what);
    fs::create_directories(tree);
    fs::copy(root, tree, fs::copy_options::recursive);
    std::string text;
    {
      std::ifstream in(tree / rel);
      std::stringstream ss;
      ss << in.rdbuf();
      text = ss.str();
    }
    std::ofstream(tree / rel) << line << text;
    compare(tree.string(), what, 0);
  }
  fs::remove_all(tmp);
  return failures;
}

static std::string notesOf(const json& j) {
  std::string all;
  if (j.is_object() && j.contains("scope"))
    for (auto& n : j["scope"]["target"]["notes"]) all += n.get<std::string>() + "\n";
  return all;
}

// A target that is not an entry (a helper, a class, a file) parses the units that define it, those on the paths from
// the entries to it and those defining what it calls, and reports exactly what a full parse reports: the same
// findings (with the same other entries reaching each spot), non-issues, functions in Scope and matches. A target
// written `!NAME` is one the text cannot be trusted to find: every unit is parsed and Scope says why.
static int partialTargets(const std::string& root, const std::vector<std::string>& targets) {
  size_t fewer = 0;
  for (std::string t : targets) {
    bool expectAll = !t.empty() && t[0] == '!';
    if (expectAll) t = t.substr(1);
    json p, f;
    EXPECT_TRUE(review({"--root", root, t, "--json"}, p) == 0, "ran " << t);
    EXPECT_TRUE(review({"--root", root, t, "--json", "--full-parse"}, f) == 0, "ran full " << t);
    EXPECT_TRUE(!p["findings"].empty() || !p["non_issues"].empty() || t.find('/') != std::string::npos,
                "a target with something to compare: " << t);
    EXPECT_TRUE(p["findings"] == f["findings"], "same findings for " << t);
    EXPECT_TRUE(p["non_issues"] == f["non_issues"], "same non-issues for " << t);
    EXPECT_TRUE(p["scope"]["functions"] == f["scope"]["functions"], "same functions in Scope for " << t);
    EXPECT_TRUE(p["scope"]["target"]["matches"] == f["scope"]["target"]["matches"] &&
                    p["scope"]["target"]["resolved"] == f["scope"]["target"]["resolved"],
                "same resolution for " << t);
    if (!p.is_object() || !f.is_object()) continue;
    size_t units = p["scope"]["parse_status"].size(), all = f["scope"]["parse_status"].size();
    std::string notes = notesOf(p);
    if (expectAll) {
      EXPECT_TRUE(units == all && notes.find("parsed every unit: ") != std::string::npos,
                  "full parse, said in Scope, for " << t << ": " << notes);
    } else {
      EXPECT_TRUE(notes.find("parsed " + std::to_string(units) + " of " + std::to_string(all)) != std::string::npos,
                  "the selection was used and Scope says so for " << t << ": " << notes);
    }
    fewer += units < all;
    std::cout << t << ": " << units << " of " << all << " units, " << p["findings"].size() << " findings, "
              << p["non_issues"].size() << " non-issues\n";
  }
  EXPECT_TRUE(fewer > 0, "some target parses fewer units than the whole backend");
  return failures;
}

int main(int argc, char** argv) {
  if (argc < 3) {
    std::cerr << "usage: review_tests recall|file|function|class|symbol|diff|commit|cli FIXTURE_ROOT [CHECK]\n";
    return 2;
  }
  std::string mode = argv[1], root = fs::canonical(argv[2]).string();
  // recall ROOT [CHECK|all] [TARGET [MIN_SEEDED]]: the fixture backend reviewed as a user would (one target)
  std::string only = argc > 3 && std::string(argv[3]) != "all" ? argv[3] : "";
  if (mode == "cache") return cache(root) ? 1 : 0;
  if (mode == "partial" && argc > 3) return partialTargets(root, {argv + 3, argv + argc}) ? 1 : 0;
  if (mode == "partial") return partial(root) ? 1 : 0;
  if (mode == "prefix") return prefix(root) ? 1 : 0;
  int rc = mode == "recall"
               ? recall(root, only, argc > 4 ? argv[4] : "mlx/backend/vulkan", argc > 5 ? std::stoul(argv[5]) : 25)
               : targets(root, mode);
  return rc ? 1 : 0;
}
