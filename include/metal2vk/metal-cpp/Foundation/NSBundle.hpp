// NS::Bundle: on Linux a bundle is a directory. The main bundle is the directory of the running executable (as for
// a macOS command-line tool, whose bundle and resource URLs are both its directory); there are no frameworks.
#pragma once

#include "NSArray.hpp"
#include "NSString.hpp"

namespace NS {

class Bundle : public Referencing<Bundle> {
 public:
  static Bundle* mainBundle();
  static Bundle* bundle(const String* path);
  static Bundle* bundle(const URL* url);
  static Array* allBundles();
  static Array* allFrameworks();
  static Bundle* alloc();
  Bundle* init(const String* path);  // nil (and the object released) when `path` is not a directory
  Bundle* init(const URL* url);

  URL* bundleURL() const;
  URL* resourceURL() const;
  URL* executableURL() const;
  String* bundlePath() const;
  String* resourcePath() const;
  String* bundleIdentifier() const;  // nil: a directory has no Info.plist identifier

 protected:
  Bundle() = default;
};

}  // namespace NS
