// One parse of the backend shared by every target of a run, and kept on disk between runs: the model of each
// translation unit is stored under a key made of the unit's text, the compile options and the tool build, and
// reused while every file of the tree it read is unchanged.
#pragma once
#include <string>
#include <vector>

#include "frontend.h"
#include "model.h"

namespace m2v::review {

struct CacheOptions {
  bool enabled = true;
  std::string dir;    // "" = M2V_REVIEW_CACHE, else $XDG_CACHE_HOME/m2v-review, else ~/.cache/m2v-review
  unsigned jobs = 0;  // units parsed at once (-j N); 0 = $M2V_REVIEW_JOBS, else the machine's cores (at most 8)
};

// The model of one translation unit, as parsed or as loaded from the cache.
struct UnitModel {
  ParseStatus status;
  Codebase unit;  // the functions it extracted
};

// Parses (or loads) each of opts.files on its own, in order, into `out` (appended). Returns false only when nothing
// could be run at all (err says why).
bool parseUnits(const ParseOptions& opts, const CacheOptions& cache, std::vector<UnitModel>& out, std::string& err);
// The codebase made of these units, in this order: a function defined in several (a header's) is taken from the first.
void assembleUnits(const std::string& root, const std::vector<const UnitModel*>& units, Codebase& cb);

// Parses opts.files (each unit on its own) into cb, reusing cached units. Returns false only when nothing could be
// run at all (err says why). Fills cb.parseStatus (cached or parsed, errors, first error, functions extracted).
bool parseWithCache(const ParseOptions& opts, const CacheOptions& cache, Codebase& cb, std::string& err);

std::string defaultCacheDir();

// The whole file at `path` in `out`; false when it cannot be read.
bool readFile(const std::string& path, std::string& out);

}  // namespace m2v::review
