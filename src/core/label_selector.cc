// SPDX-License-Identifier: Apache-2.0

#include <algorithm>
#include <charconv>
#include <set>

#include "core/label_parser.h"
#include "core/label_validation.h"
#include "kcache/label_selector.h"

namespace kcache {
namespace {

bool ParseInt64(std::string_view s, int64_t* out) {
  if (s.empty()) return false;
  const char* begin = s.data();
  if (*begin == '+') ++begin;  // strconv.ParseInt accepts a leading '+'
  auto [ptr, ec] = std::from_chars(begin, s.data() + s.size(), *out);
  return ec == std::errc() && ptr == s.data() + s.size() && begin != ptr;
}

std::string QuoteList(const std::vector<std::string>& values) {
  std::string out = "[";
  for (size_t i = 0; i < values.size(); ++i) {
    if (i) out += ",";
    out += labels::Quote(values[i]);
  }
  return out + "]";
}

}  // namespace

StatusOr<Requirement> Requirement::Create(std::string key, SelectionOperator op,
                                          std::vector<std::string> values) {
  std::vector<std::string> errs;
  if (auto e = labels::IsQualifiedName(key); !e.empty()) {
    errs.push_back(labels::InvalidField("key", labels::Quote(key), e));
  }
  switch (op) {
    case SelectionOperator::kIn:
    case SelectionOperator::kNotIn:
      if (values.empty()) {
        errs.push_back(
            labels::InvalidField("values", QuoteList(values),
                                 {"for 'in', 'notin' operators, values set can't be empty"}));
      }
      break;
    case SelectionOperator::kEquals:
    case SelectionOperator::kDoubleEquals:
    case SelectionOperator::kNotEquals:
      if (values.size() != 1) {
        errs.push_back(labels::InvalidField(
            "values", QuoteList(values), {"exact-match compatibility requires one single value"}));
      }
      break;
    case SelectionOperator::kExists:
    case SelectionOperator::kDoesNotExist:
      if (!values.empty()) {
        errs.push_back(
            labels::InvalidField("values", QuoteList(values),
                                 {"values set must be empty for exists and does not exist"}));
      }
      break;
    case SelectionOperator::kGreaterThan:
    case SelectionOperator::kLessThan:
      if (values.size() != 1) {
        errs.push_back(
            labels::InvalidField("values", QuoteList(values),
                                 {"for 'Gt', 'Lt' operators, exactly one value is required"}));
      }
      for (size_t i = 0; i < values.size(); ++i) {
        int64_t ignored;
        if (!ParseInt64(values[i], &ignored)) {
          errs.push_back(
              labels::InvalidField("values[" + std::to_string(i) + "]", labels::Quote(values[i]),
                                   {"for 'Gt', 'Lt' operators, the value must be an integer"}));
        }
      }
      break;
    default:
      errs.push_back("operator: Unsupported value: " + std::to_string(static_cast<int>(op)) +
                     ": supported values: \"!\", \"=\", \"==\", \"in\", \"notin\", \"exists\", "
                     "\"!=\", \"gt\", \"lt\"");
  }
  for (size_t i = 0; i < values.size(); ++i) {
    if (auto e = labels::IsValidLabelValue(values[i]); !e.empty()) {
      errs.push_back(labels::InvalidField("values[" + std::to_string(i) + "][" + key + "]",
                                          labels::Quote(values[i]), e));
    }
  }
  if (!errs.empty()) {
    std::string msg = errs[0];
    for (size_t i = 1; i < errs.size(); ++i) msg += "; " + errs[i];
    return Status::InvalidArgument(msg);
  }
  std::sort(values.begin(), values.end());
  values.erase(std::unique(values.begin(), values.end()), values.end());
  return Requirement(std::move(key), op, std::move(values));
}

bool Requirement::Matches(const Labels& labels) const {
  auto it = labels.find(key_);
  bool has = it != labels.end();
  auto has_value = [&] {
    return has && std::binary_search(values_.begin(), values_.end(), it->second);
  };
  switch (op_) {
    case SelectionOperator::kIn:
    case SelectionOperator::kEquals:
    case SelectionOperator::kDoubleEquals:
      return has_value();
    case SelectionOperator::kNotIn:
    case SelectionOperator::kNotEquals:
      return !has_value();
    case SelectionOperator::kExists:
      return has;
    case SelectionOperator::kDoesNotExist:
      return !has;
    case SelectionOperator::kGreaterThan:
    case SelectionOperator::kLessThan: {
      int64_t have, want;
      if (!has || values_.size() != 1 || !ParseInt64(it->second, &have) ||
          !ParseInt64(values_[0], &want)) {
        return false;
      }
      return op_ == SelectionOperator::kGreaterThan ? have > want : have < want;
    }
    case SelectionOperator::kUnset:
      break;
  }
  return false;
}

std::string Requirement::String() const {
  std::string out;
  if (op_ == SelectionOperator::kDoesNotExist) out += "!";
  out += key_;
  switch (op_) {
    case SelectionOperator::kEquals:
      out += "=";
      break;
    case SelectionOperator::kDoubleEquals:
      out += "==";
      break;
    case SelectionOperator::kNotEquals:
      out += "!=";
      break;
    case SelectionOperator::kIn:
      out += " in ";
      break;
    case SelectionOperator::kNotIn:
      out += " notin ";
      break;
    case SelectionOperator::kGreaterThan:
      out += ">";
      break;
    case SelectionOperator::kLessThan:
      out += "<";
      break;
    case SelectionOperator::kExists:
    case SelectionOperator::kDoesNotExist:
      return out;
    case SelectionOperator::kUnset:
      break;
  }
  bool set = op_ == SelectionOperator::kIn || op_ == SelectionOperator::kNotIn;
  if (set) out += "(";
  for (size_t i = 0; i < values_.size(); ++i) {
    if (i) out += ",";
    out += values_[i];
  }
  if (set) out += ")";
  return out;
}

LabelSelector LabelSelector::Nothing() {
  LabelSelector s;
  s.nothing_ = true;
  return s;
}

StatusOr<LabelSelector> LabelSelector::Parse(std::string_view selector) {
  labels::Parser parser(selector);
  KCACHE_ASSIGN_OR_RETURN(std::vector<Requirement> reqs, parser.Parse());
  std::stable_sort(reqs.begin(), reqs.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key() < b.key(); });
  return FromRequirements(std::move(reqs));
}

LabelSelector LabelSelector::FromSet(const Labels& set) {
  LabelSelector s;
  for (const auto& [k, v] : set) {
    s.requirements_.push_back(Requirement(k, SelectionOperator::kEquals, {v}));
  }
  return s;
}

StatusOr<LabelSelector> LabelSelector::ValidatedFromSet(const Labels& set) {
  LabelSelector s;
  for (const auto& [k, v] : set) {
    KCACHE_ASSIGN_OR_RETURN(Requirement r, Requirement::Create(k, SelectionOperator::kEquals, {v}));
    s.requirements_.push_back(std::move(r));
  }
  return s;
}

LabelSelector LabelSelector::FromRequirements(std::vector<Requirement> requirements) {
  LabelSelector s;
  s.requirements_ = std::move(requirements);
  return s;
}

LabelSelector LabelSelector::Add(Requirement r) const {
  LabelSelector s = *this;
  s.requirements_.push_back(std::move(r));
  std::stable_sort(s.requirements_.begin(), s.requirements_.end(),
                   [](const Requirement& a, const Requirement& b) { return a.key() < b.key(); });
  return s;
}

bool LabelSelector::Matches(const Labels& labels) const {
  if (nothing_) return false;
  for (const Requirement& r : requirements_) {
    if (!r.Matches(labels)) return false;
  }
  return true;
}

std::string LabelSelector::String() const {
  std::string out;
  for (size_t i = 0; i < requirements_.size(); ++i) {
    if (i) out += ",";
    out += requirements_[i].String();
  }
  return out;
}

std::optional<std::string> LabelSelector::RequiresExactMatch(std::string_view key) const {
  for (const Requirement& r : requirements_) {
    if (r.key() != key) continue;
    switch (r.op()) {
      case SelectionOperator::kEquals:
      case SelectionOperator::kDoubleEquals:
      case SelectionOperator::kIn:
        if (r.values().size() == 1) return r.values()[0];
        break;
      default:
        break;
    }
    return std::nullopt;
  }
  return std::nullopt;
}

// --- labels.h helpers ---

std::string LabelsToString(const Labels& labels) {
  std::string out;
  for (const auto& [k, v] : labels) {
    if (!out.empty()) out += ",";
    out += k + "=" + v;
  }
  return out;
}

bool LabelsConflict(const Labels& a, const Labels& b) {
  const Labels& small = a.size() <= b.size() ? a : b;
  const Labels& big = a.size() <= b.size() ? b : a;
  for (const auto& [k, v] : small) {
    auto it = big.find(k);
    if (it != big.end() && it->second != v) return true;
  }
  return false;
}

StatusOr<Labels> ConvertSelectorToLabelsMap(std::string_view selector) {
  Labels out;
  if (selector.empty()) return out;
  auto trim = [](std::string_view s) {
    while (!s.empty() && (s.front() == ' ' || s.front() == '\t')) s.remove_prefix(1);
    while (!s.empty() && (s.back() == ' ' || s.back() == '\t')) s.remove_suffix(1);
    return s;
  };
  size_t start = 0;
  while (true) {
    size_t comma = selector.find(',', start);
    std::string_view term =
        selector.substr(start, comma == selector.npos ? selector.npos : comma - start);
    size_t eq = term.find('=');
    if (eq == term.npos || term.find('=', eq + 1) != term.npos) {
      return Status::InvalidArgument("invalid selector: \"" + std::string(term) +
                                     "\": expected key=value");
    }
    std::string key(trim(term.substr(0, eq)));
    std::string value(trim(term.substr(eq + 1)));
    if (auto e = labels::IsQualifiedName(key); !e.empty()) {
      return Status::InvalidArgument(labels::InvalidField("key", labels::Quote(key), e));
    }
    if (auto e = labels::IsValidLabelValue(value); !e.empty()) {
      return Status::InvalidArgument(
          labels::InvalidField("values[0][" + key + "]", labels::Quote(value), e));
    }
    out[key] = value;
    if (comma == selector.npos) break;
    start = comma + 1;
  }
  return out;
}

}  // namespace kcache
