// Which translation units a target needs. Parsing is most of the cost of a cold review, and a target's report depends
// only on the functions on the paths from an entry to it (its callers, up to the entries) and on what it calls. The
// selection reads the text of the tree (identifiers, macro bodies, includes) to find the units that can hold those
// functions, parses them, learns the callers they define, and repeats until nothing new turns up.
#pragma once
#include <string>
#include <vector>

#include "cache.h"
#include "config.h"
#include "engine.h"
#include "frontend.h"
#include "targets.h"

namespace m2v::review {

struct Selection {
  bool partial = false;  // cb and target come from the selected units only
  std::string note;      // the Scope line saying what was read (or why every unit must be)
};

// For a function, class or file target: the units that define the target, then the units that name a function
// already known to be on a path from an entry to it (iterating toward callers until entries or nothing new; an entry
// target needs none), the definitions of what the target calls (transitively), and a unit including each header that
// holds any of these. partial=false (note says why) when the text cannot be trusted to find them, e.g. a target
// nothing spells (defined through a macro); the caller then parses every unit. cb and target are set only when
// partial is true.
Selection selectUnits(const ParseOptions& po, const CacheOptions& cache, const Rules& rules, const TargetSpec& spec,
                      Codebase& cb, Target& target);

// The text defines (or declares) a function `name`: a line with a type before `name(`, not a call statement.
bool definesName(const std::string& text, const std::string& name);

}  // namespace m2v::review
