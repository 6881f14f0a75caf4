// SPDX-License-Identifier: Apache-2.0

// Command-line flags in kubectl's spelling: --name=value, --name value,
// -n value, -n=value, -nvalue; booleans as --flag or --flag=false; "--" ends
// the flags.

#ifndef KCACHE_TOOLS_KCACHE_FLAGS_H_
#define KCACHE_TOOLS_KCACHE_FLAGS_H_

#include <chrono>
#include <cstdint>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <vector>

#include "kcache/status.h"
#include "kcache/status_or.h"

namespace kcache::cli {

class FlagSet {
 public:
  // `shorthand` is one letter or '\0'. Destinations keep their value when
  // the flag is absent: set defaults before parsing.
  void String(std::string name, char shorthand, std::string* dst, std::string help);
  void Int(std::string name, char shorthand, int64_t* dst, std::string help);
  // The same for an int: "out of range" beyond its limits.
  void Int(std::string name, char shorthand, int* dst, std::string help);
  void Bool(std::string name, char shorthand, bool* dst, std::string help);
  // Repeatable; each value is split on commas ("-L a,b -L c": a, b, c).
  void StringSlice(std::string name, char shorthand, std::vector<std::string>* dst,
                   std::string help);
  // The same for integers ("--objects 10,100"); the first use replaces the
  // default.
  void IntSlice(std::string name, char shorthand, std::vector<int>* dst, std::string help);

  // Parses `args`; non-flag arguments go to `positional` in order.
  // InvalidArgument "unknown flag: --x", "flag needs an argument: --x",
  // `invalid argument "abc" for "--objects" flag: not an integer`.
  Status Parse(const std::vector<std::string>& args, std::vector<std::string>* positional);

  // Whether the last Parse set flag `name` (by its long name).
  bool Changed(std::string_view name) const;

  // One line per flag: "  -n, --namespace string   help (default "x")".
  std::string Usage() const;

  // The long names, in the order they were defined.
  std::vector<std::string> Names() const;

  // What shell completion needs of a flag.
  struct Info {
    std::string name;
    char shorthand;
    std::string type;  // "string", "int", "strings" or "ints"; "" for a boolean
    std::string help;
  };
  // Every flag, in the order they were defined.
  std::vector<Info> Describe() const;

 private:
  enum class Kind { kString, kInt, kInt32, kBool, kStringSlice, kIntSlice };
  struct Flag {
    std::string name;
    char shorthand;
    Kind kind;
    void* dst;
    std::string help;
    std::string default_value;
  };
  static std::string TypeName(Kind kind);  // as Usage and Describe say it
  const Flag* Find(std::string_view name) const;
  const Flag* FindShort(char c) const;
  Status Set(const Flag& f, std::string_view spelled, std::string_view value) const;

  std::vector<Flag> flags_;
  std::set<std::string, std::less<>> changed_;
};

// A Go duration as kubectl's --request-timeout takes it: "0", "30"
// (seconds), "500ms", "1m30s"; InvalidArgument naming --request-timeout
// otherwise.
StatusOr<std::chrono::milliseconds> ParseDuration(const std::string& s);

}  // namespace kcache::cli

#endif  // KCACHE_TOOLS_KCACHE_FLAGS_H_
