// Internal model of a parsed codebase: what the clang front end extracts, what checks read.
// No clang headers here, so checks and the engine compile quickly.
#pragma once
#include <map>
#include <string>
#include <vector>

namespace m2v::review {

// One enclosing condition on the way to an event, in the code's own terms.
struct Cond {
  std::string text;   // source text of the condition (or of the case label)
  std::string kind;   // "if", "else", "case", "default", "guard" (early return not taken), "?:", "else ?:"
  std::string owner;  // for "case": the switch condition text
  unsigned line = 0;
  bool envGated = false;          // reads an environment switch (getenv ...)
  bool onceFlag = false;          // tests a static flag set inside the branch (one-time warm-up)
  std::vector<std::string> vars;  // variables it references
  std::string describe() const;
};

struct Loop {
  std::string header;  // "for (int i = 0; i < n; ++i)"
  std::string kind;    // for, range-for, while, do
  unsigned line = 0;
  long constBound = -1;  // literal trip bound if the loop is `i < LITERAL`, else -1
};

// A call (or a pointer read, or an assignment) inside a function body.
struct Event {
  std::string kind;          // "call", "deref", "assign", "return" (value in text), "ref" (a function named without being called: a table entry,
                             // a std::function target, a callback; the engine treats it as a possible call)
  std::string name;          // callee unqualified name (for deref/assign: the variable)
  std::string qualName;      // callee qualified name when resolved
  std::string calleeKey;     // key of the callee declaration (resolved by the engine against the codebase)
  std::string receiver;      // member call object, source text
  std::string receiverVar;   // root variable of the object
  std::string receiverType;  // type of the object as written by clang
  std::vector<std::string> args;     // argument source texts
  std::vector<std::string> argVars;  // root variable of each argument ("" if none)
  std::string templateArgs;          // item<float> -> "float"
  std::string text;                  // source text of the whole call
  std::string use;  // how the result is used: "subscript", "deref", "var:NAME", "arg:CALLEE", "cond", "other"
  unsigned line = 0, col = 0;
  std::vector<Cond> conds;   // enclosing conditions in this function, outermost first
  std::vector<Loop> loops;   // enclosing loops in this function, outermost first
  bool inCondition = false;  // inside an if/while/switch condition
  bool inOnce = false;       // inside a call_once body or a static initializer
  bool isWrite = false;      // deref used as an assignment target
};

struct Var {
  std::string name;
  std::string type;
  unsigned line = 0;
  bool isParam = false;
  bool isStatic = false;
  std::string initText;  // for a parameter: its default argument, if any
  std::string
      initKind;  // "op" (call result), "host" (array built from host values), "placeholder", "alias", "none", "other"
  std::string initCallee;             // callee name when initKind is "op"
  std::vector<std::string> initVars;  // variables the initializer references
};

struct Function {
  std::string key;   // qualified name + parameter types
  std::string name;  // unqualified
  std::string qualName;
  std::string className;  // enclosing class, "" for free functions
  std::string file;       // absolute path
  unsigned line = 0, endLine = 0;
  std::vector<std::string> params;
  std::vector<std::string> overrides;  // keys of the virtual methods this one overrides (directly or not)
  bool isVirtual = false;
  bool internalLinkage = false;  // static or in an anonymous namespace: callable only from its own unit
  std::vector<Event> events;
  std::vector<Var> vars;  // params first, then locals in order
  const Var* var(const std::string& n) const {
    for (auto& v : vars)
      if (v.name == n) return &v;
    return nullptr;
  }
};

// What the front end made of one translation unit.
struct ParseStatus {
  std::string file;        // absolute
  unsigned errors = 0;     // error diagnostics clang recovered from
  std::string firstError;  // "path:line: message" of the first one
  unsigned functions = 0;  // functions defined in this file that were extracted (from any unit)
  bool cached = false;     // model loaded from the on-disk cache instead of parsing
  std::vector<std::string> deps;  // files of the tree (and of the include dirs) the unit read, itself first
};

struct Codebase {
  std::string root;
  std::map<std::string, Function> functions;  // by key
  std::vector<std::string> parsedFiles;       // translation units
  unsigned errors = 0;                        // recovered error diagnostics
  std::vector<ParseStatus> parseStatus;       // one per translation unit, in parse order
  std::vector<std::string> includeDirs;       // include roots used (found in the tree or given)
  std::string compileCommands;                // compile_commands.json used, if any
  std::vector<std::string> notes;
};

}  // namespace m2v::review
