// NS::String, NS::URL and NS::Error.
#pragma once

#include "NSObject.hpp"

namespace NS {

class Dictionary;

enum StringEncoding : UInteger {
  ASCIIStringEncoding = 1,
  NEXTSTEPStringEncoding = 2,
  JapaneseEUCStringEncoding = 3,
  UTF8StringEncoding = 4,
  ISOLatin1StringEncoding = 5,
  NonLossyASCIIStringEncoding = 7,
  UnicodeStringEncoding = 10,
  UTF16StringEncoding = UnicodeStringEncoding,
  UTF32StringEncoding = 0x8c000100,
};

// An immutable string. metal2vk stores UTF-8; ASCII input is taken as is, other encodings are refused (nil).
class String : public Referencing<String> {
 public:
  static String* alloc();
  String* init();
  String* init(const char* cString, StringEncoding encoding);
  String* init(const String* other);

  static String* string();
  static String* string(const String* other);
  static String* string(const char* cString, StringEncoding encoding);

  const char* utf8String() const;
  const char* cString(StringEncoding encoding) const;
  UInteger length() const;
  UInteger lengthOfBytes(StringEncoding encoding) const;
  UInteger maximumLengthOfBytes(StringEncoding encoding) const;
  bool isEqualToString(const String* other) const;
  String* stringByAppendingString(const String* other) const;

 protected:
  String() = default;
};

class URL : public Referencing<URL> {
 public:
  static URL* alloc();
  URL* init();
  URL* init(const String* string);  // an absolute URL string; "file://" URLs name local paths
  URL* initFileURLWithPath(const String* path);
  static URL* fileURLWithPath(const String* path);

  const char* fileSystemRepresentation() const;
  String* absoluteString() const;
  String* path() const;

 protected:
  URL() = default;
};

using ErrorDomain = String*;

class Error : public Referencing<Error> {
 public:
  static Error* error(ErrorDomain domain, Integer code, Dictionary* userInfo);
  static Error* alloc();
  Error* init();
  Error* init(ErrorDomain domain, Integer code, Dictionary* userInfo);

  Integer code() const;
  ErrorDomain domain() const;
  Dictionary* userInfo() const;
  String* localizedDescription() const;
  String* localizedFailureReason() const;
  String* localizedRecoverySuggestion() const;

 protected:
  Error() = default;
};

}  // namespace NS
