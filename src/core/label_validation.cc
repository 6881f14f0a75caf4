// SPDX-License-Identifier: Apache-2.0

#include "core/label_validation.h"

namespace kcache::labels {
namespace {

constexpr size_t kQualifiedNameMaxLength = 63;
constexpr size_t kLabelValueMaxLength = 63;
constexpr size_t kDNS1123SubdomainMaxLength = 253;

bool IsAlnum(char c) {
  return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
}

// ([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9], non-empty.
bool MatchesQualifiedNameChars(std::string_view s) {
  if (s.empty() || !IsAlnum(s.front()) || !IsAlnum(s.back())) return false;
  for (char c : s) {
    if (!IsAlnum(c) && c != '-' && c != '_' && c != '.') return false;
  }
  return true;
}

bool IsLowerAlnum(char c) { return (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9'); }

// [a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*
bool MatchesDNS1123Subdomain(std::string_view s) {
  size_t start = 0;
  while (true) {
    size_t dot = s.find('.', start);
    std::string_view label = s.substr(start, dot == std::string_view::npos ? s.npos : dot - start);
    if (label.empty() || !IsLowerAlnum(label.front()) || !IsLowerAlnum(label.back())) return false;
    for (char c : label) {
      if (!IsLowerAlnum(c) && c != '-') return false;
    }
    if (dot == std::string_view::npos) return true;
    start = dot + 1;
  }
}

constexpr char kQualifiedNameCharsMsg[] =
    "must consist of alphanumeric characters, '-', '_' or '.', and must start and end with an "
    "alphanumeric character (e.g. 'MyName', or 'my.name', or '123-abc', regex used for "
    "validation is '([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]')";

}  // namespace

std::vector<std::string> IsDNS1123Subdomain(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > kDNS1123SubdomainMaxLength) {
    errs.push_back("must be no more than 253 characters");
  }
  if (!MatchesDNS1123Subdomain(s)) {
    errs.push_back(
        "a lowercase RFC 1123 subdomain must consist of lower case alphanumeric characters, '-' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'example.com', regex "
        "used for validation is "
        "'[a-z0-9]([-a-z0-9]*[a-z0-9])?(\\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*')");
  }
  return errs;
}

std::vector<std::string> IsQualifiedName(std::string_view s) {
  std::vector<std::string> errs;
  std::string_view name = s;
  size_t slash = s.find('/');
  if (slash != std::string_view::npos) {
    if (s.find('/', slash + 1) != std::string_view::npos) {
      errs.push_back(std::string("a qualified name ") + kQualifiedNameCharsMsg +
                     " with an optional DNS subdomain prefix and '/' (e.g. 'example.com/MyName')");
      return errs;
    }
    std::string_view prefix = s.substr(0, slash);
    name = s.substr(slash + 1);
    if (prefix.empty()) {
      errs.push_back("prefix part must be non-empty");
    } else {
      for (const std::string& e : IsDNS1123Subdomain(prefix)) errs.push_back("prefix part " + e);
    }
  }
  if (name.empty()) {
    errs.push_back("name part must be non-empty");
  } else if (name.size() > kQualifiedNameMaxLength) {
    errs.push_back("name part must be no more than 63 characters");
  }
  if (!name.empty() && !MatchesQualifiedNameChars(name)) {
    errs.push_back(std::string("name part ") + kQualifiedNameCharsMsg);
  }
  return errs;
}

std::vector<std::string> IsValidLabelValue(std::string_view s) {
  std::vector<std::string> errs;
  if (s.size() > kLabelValueMaxLength) errs.push_back("must be no more than 63 characters");
  if (!s.empty() && !MatchesQualifiedNameChars(s)) {
    errs.push_back(
        "a valid label must be an empty string or consist of alphanumeric characters, '-', '_' "
        "or '.', and must start and end with an alphanumeric character (e.g. 'MyValue', or "
        "'my_value', or '12345', regex used for validation is "
        "'(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?')");
  }
  return errs;
}

std::string Quote(std::string_view s) {
  std::string out = "\"";
  for (char c : s) {
    if (c == '"' || c == '\\') out += '\\';
    out += c;
  }
  out += '"';
  return out;
}

std::string InvalidField(std::string_view path, std::string_view quoted_value,
                         const std::vector<std::string>& reasons) {
  std::string out(path);
  out += ": Invalid value: ";
  out += quoted_value;
  out += ": ";
  for (size_t i = 0; i < reasons.size(); ++i) {
    if (i) out += "; ";
    out += reasons[i];
  }
  return out;
}

}  // namespace kcache::labels
