// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/flags.h"

#include <cctype>
#include <charconv>
#include <limits>

#include "util/strings.h"

namespace kcache::cli {

void FlagSet::String(std::string name, char shorthand, std::string* dst, std::string help) {
  flags_.push_back({std::move(name), shorthand, Kind::kString, dst, std::move(help), *dst});
}

void FlagSet::Int(std::string name, char shorthand, int64_t* dst, std::string help) {
  flags_.push_back(
      {std::move(name), shorthand, Kind::kInt, dst, std::move(help), std::to_string(*dst)});
}

void FlagSet::Int(std::string name, char shorthand, int* dst, std::string help) {
  flags_.push_back(
      {std::move(name), shorthand, Kind::kInt32, dst, std::move(help), std::to_string(*dst)});
}

void FlagSet::Bool(std::string name, char shorthand, bool* dst, std::string help) {
  flags_.push_back(
      {std::move(name), shorthand, Kind::kBool, dst, std::move(help), *dst ? "true" : "false"});
}

void FlagSet::StringSlice(std::string name, char shorthand, std::vector<std::string>* dst,
                          std::string help) {
  flags_.push_back({std::move(name), shorthand, Kind::kStringSlice, dst, std::move(help), ""});
}

void FlagSet::IntSlice(std::string name, char shorthand, std::vector<int>* dst, std::string help) {
  std::string defaults;
  for (int v : *dst) defaults += (defaults.empty() ? "" : ",") + std::to_string(v);
  flags_.push_back({std::move(name), shorthand, Kind::kIntSlice, dst, std::move(help), defaults});
}

const FlagSet::Flag* FlagSet::Find(std::string_view name) const {
  for (const Flag& f : flags_) {
    if (f.name == name) return &f;
  }
  return nullptr;
}

const FlagSet::Flag* FlagSet::FindShort(char c) const {
  for (const Flag& f : flags_) {
    if (f.shorthand != '\0' && f.shorthand == c) return &f;
  }
  return nullptr;
}

Status FlagSet::Set(const Flag& f, std::string_view spelled, std::string_view value) const {
  auto bad = [&](std::string_view why) {
    return Status::InvalidArgument("invalid argument \"" + std::string(value) + "\" for \"" +
                                   std::string(spelled) + "\" flag: " + std::string(why));
  };
  switch (f.kind) {
    case Kind::kString:
      *static_cast<std::string*>(f.dst) = value;
      return Status::OK();
    case Kind::kStringSlice: {
      auto* out = static_cast<std::vector<std::string>*>(f.dst);
      size_t from = 0;
      for (;;) {
        size_t comma = value.find(',', from);
        out->emplace_back(
            value.substr(from, comma == std::string_view::npos ? comma : comma - from));
        if (comma == std::string_view::npos) break;
        from = comma + 1;
      }
      return Status::OK();
    }
    case Kind::kInt:
    case Kind::kInt32: {
      int64_t v = 0;
      auto [ptr, ec] = std::from_chars(value.data(), value.data() + value.size(), v);
      if (ec != std::errc() || ptr != value.data() + value.size() || value.empty()) {
        return bad("not an integer");
      }
      if (f.kind == Kind::kInt) {
        *static_cast<int64_t*>(f.dst) = v;
      } else if (v < std::numeric_limits<int>::min() || v > std::numeric_limits<int>::max()) {
        return bad("out of range");
      } else {
        *static_cast<int*>(f.dst) = static_cast<int>(v);
      }
      return Status::OK();
    }
    case Kind::kIntSlice: {
      auto* out = static_cast<std::vector<int>*>(f.dst);
      std::vector<int> values;
      for (std::string_view item : Split(value, ',')) {
        int v = 0;
        auto [ptr, ec] = std::from_chars(item.data(), item.data() + item.size(), v);
        if (ec != std::errc() || ptr != item.data() + item.size() || item.empty()) {
          return bad("not a list of integers");
        }
        values.push_back(v);
      }
      if (!changed_.contains(f.name)) out->clear();
      out->insert(out->end(), values.begin(), values.end());
      return Status::OK();
    }
    case Kind::kBool:
      if (value == "true" || value == "1") {
        *static_cast<bool*>(f.dst) = true;
      } else if (value == "false" || value == "0") {
        *static_cast<bool*>(f.dst) = false;
      } else {
        return bad("not a boolean (true or false)");
      }
      return Status::OK();
  }
  return Status::Internal("unknown flag kind");
}

Status FlagSet::Parse(const std::vector<std::string>& args, std::vector<std::string>* positional) {
  for (size_t i = 0; i < args.size(); ++i) {
    std::string_view arg = args[i];
    if (arg == "--") {
      positional->insert(positional->end(), args.begin() + static_cast<long>(i) + 1, args.end());
      return Status::OK();
    }
    if (arg.size() < 2 || arg[0] != '-' || arg == "-") {
      positional->emplace_back(arg);
      continue;
    }
    const Flag* f = nullptr;
    std::string spelled;
    std::optional<std::string_view> value;
    if (arg.substr(0, 2) == "--") {
      std::string_view body = arg.substr(2);
      size_t eq = body.find('=');
      std::string_view name = body.substr(0, eq);
      if (eq != std::string_view::npos) value = body.substr(eq + 1);
      f = Find(name);
      spelled = "--" + std::string(name);
    } else {
      f = FindShort(arg[1]);
      spelled = std::string(arg.substr(0, 2));
      if (arg.size() > 2) value = arg[2] == '=' ? arg.substr(3) : arg.substr(2);
    }
    if (!f) return Status::InvalidArgument("unknown flag: " + spelled);
    if (!value) {
      if (f->kind == Kind::kBool) {
        value = "true";
      } else if (i + 1 < args.size()) {
        value = args[++i];
      } else {
        return Status::InvalidArgument("flag needs an argument: " + spelled);
      }
    }
    KCACHE_RETURN_IF_ERROR(Set(*f, spelled, *value));
    changed_.insert(f->name);
  }
  return Status::OK();
}

bool FlagSet::Changed(std::string_view name) const { return changed_.count(name) > 0; }

std::string FlagSet::TypeName(Kind kind) {
  switch (kind) {
    case Kind::kString:
      return "string";
    case Kind::kInt:
    case Kind::kInt32:
      return "int";
    case Kind::kStringSlice:
      return "strings";
    case Kind::kIntSlice:
      return "ints";
    case Kind::kBool:
      return "";
  }
  return "";
}

std::string FlagSet::Usage() const {
  std::string out;
  for (const Flag& f : flags_) {
    std::string left = "  ";
    left += f.shorthand ? std::string("-") + f.shorthand + ", " : "    ";
    left += "--" + f.name;
    if (f.kind != Kind::kBool) left += " " + TypeName(f.kind);
    if (left.size() < 32) left.resize(32, ' ');
    out += left + " " + f.help;
    if (!f.default_value.empty() && f.default_value != "false") {
      out += " (default " +
             (f.kind == Kind::kString ? "\"" + f.default_value + "\"" : f.default_value) + ")";
    }
    out += "\n";
  }
  return out;
}

StatusOr<std::chrono::milliseconds> ParseDuration(const std::string& s) {
  auto bad = [&] {
    return Status::InvalidArgument(
        "invalid argument \"" + s +
        "\" for \"--request-timeout\": want a duration such as 30s, 500ms or 1m30s");
  };
  if (!s.empty() && s.find_first_not_of("0123456789") == std::string::npos) {
    int64_t seconds = 0;
    auto [end, ec] = std::from_chars(s.data(), s.data() + s.size(), seconds);
    if (ec != std::errc() || seconds > std::numeric_limits<int64_t>::max() / 1000) return bad();
    return std::chrono::milliseconds(seconds * 1000);
  }
  static const std::vector<std::pair<std::string, double>> kUnits = {
      {"ms", 1}, {"us", 1e-3}, {"ns", 1e-6}, {"h", 3600e3}, {"m", 60e3}, {"s", 1e3}};
  double total = 0;
  size_t i = 0;
  if (s.empty()) return bad();
  while (i < s.size()) {
    size_t start = i;
    while (i < s.size() && (std::isdigit(static_cast<unsigned char>(s[i])) || s[i] == '.')) ++i;
    if (i == start) return bad();
    double v = 0;  // from_chars: "." is an error here, not an exception
    auto [end, ec] = std::from_chars(s.data() + start, s.data() + i, v);
    if (ec != std::errc() || end != s.data() + i) return bad();
    bool matched = false;
    for (const auto& [unit, ms] : kUnits) {
      if (s.compare(i, unit.size(), unit) == 0) {
        total += v * ms;
        i += unit.size();
        matched = true;
        break;
      }
    }
    if (!matched) return bad();
  }
  if (total >= 9e18) return bad();  // beyond what milliseconds hold
  return std::chrono::milliseconds(static_cast<int64_t>(total));
}

std::vector<std::string> FlagSet::Names() const {
  std::vector<std::string> names;
  for (const Flag& f : flags_) names.push_back(f.name);
  return names;
}

std::vector<FlagSet::Info> FlagSet::Describe() const {
  std::vector<Info> out;
  for (const Flag& f : flags_) out.push_back({f.name, f.shorthand, TypeName(f.kind), f.help});
  return out;
}

}  // namespace kcache::cli
