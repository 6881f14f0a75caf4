// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/bench/decode_bench.h"

#include <malloc.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "client/json_framer.h"
#include "kcache/object.h"
#include "tools/kcache/bench/timing.h"
#include "tools/kcache/testcluster/pods.h"

namespace kcache::bench {
namespace {

size_t HeapInUse() { return mallinfo2().uordblks; }

struct Method {
  const char* name;
  // Decodes one document; returns a value that depends on the decode so the
  // work cannot be optimised away.
  std::function<size_t(const std::string&)> decode;
  // Decodes and keeps the result, for the memory column.
  std::function<std::shared_ptr<void>(const std::string&)> keep;
};

size_t NlohmannMeta(const nlohmann::json& j) {
  const auto& m = j.at("metadata");
  size_t n = m.at("name").get_ref<const std::string&>().size() +
             m.at("namespace").get_ref<const std::string&>().size() +
             m.at("resourceVersion").get_ref<const std::string&>().size();
  for (const auto& [k, v] : m.at("labels").items())
    n += k.size() + v.get_ref<const std::string&>().size();
  return n;
}

size_t KcacheMeta(const Object& o) {
  size_t n = o.name().size() + o.namespace_().size() + o.resource_version().size();
  for (const auto& [k, v] : o.labels()) n += k.size() + v.size();
  return n;
}

std::vector<Method> Methods() {
  return {
      {"nlohmann_json full parse",
       [](const std::string& s) { return NlohmannMeta(nlohmann::json::parse(s)); },
       [](const std::string& s) {
         return std::make_shared<nlohmann::json>(nlohmann::json::parse(s));
       }},
      {"kcache Object::Parse", [](const std::string& s) { return KcacheMeta(**Object::Parse(s)); },
       [](const std::string& s) { return std::const_pointer_cast<Object>(*Object::Parse(s)); }},
      {"kcache Object::Parse, drop managedFields",
       [](const std::string& s) {
         return KcacheMeta(**Object::Parse(s, {.drop_managed_fields = true}));
       },
       [](const std::string& s) {
         return std::const_pointer_cast<Object>(*Object::Parse(s, {.drop_managed_fields = true}));
       }},
      {"kcache Object::ParseTrusted (stored bytes)",
       [](const std::string& s) { return KcacheMeta(**Object::ParseTrusted(s)); },
       [](const std::string& s) {
         return std::const_pointer_cast<Object>(*Object::ParseTrusted(s));
       }},
  };
}

// One row of the table: `m`'s median decode rate over `runs`, against
// `*baseline` (the first method's median, set by the first row), and the
// heap it holds per kept object.
void DecodeRow(const Method& m, const std::vector<std::string>& docs, size_t bytes, int runs,
               double* baseline, std::ostream& out) {
  std::vector<double> seconds;
  size_t sink = 0;
  for (int r = 0; r < runs; ++r) {
    auto start = Clock::now();
    for (const std::string& d : docs) sink += m.decode(d);
    seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const double median = Median(seconds);
  if (*baseline == 0) *baseline = median;

  // Memory: heap held by keeping every decoded document.
  malloc_trim(0);
  size_t before = HeapInUse();
  std::vector<std::shared_ptr<void>> kept;
  kept.reserve(docs.size());
  size_t vector_bytes = HeapInUse() - before;
  for (const std::string& d : docs) kept.push_back(m.keep(d));
  double per_object = double(HeapInUse() - before - vector_bytes) / docs.size();
  kept.clear();

  char line[256];
  std::snprintf(line, sizeof line, "%-42s %10.1f %12.0f %9.2f %11.1f KB%s\n", m.name,
                bytes / median / 1e6, docs.size() / median, *baseline / median, per_object / 1024,
                sink == 0 ? " (no work?)" : "");
  out << line;
}

// Framing: the same pods as one watch stream, appended in reads of 16 KiB
// as the network delivers them, against copying the same bytes (the
// least any pass over them costs).
Status FramingRows(const std::vector<std::string>& docs, int runs, std::ostream& out) {
  std::string stream;
  for (const std::string& d : docs) stream += "{\"type\":\"ADDED\",\"object\":" + d + "}\n";
  constexpr size_t kRead = 16 << 10;
  std::string copy;
  std::vector<double> copy_seconds;
  for (int r = 0; r < runs; ++r) {
    auto start = Clock::now();
    copy.clear();
    for (size_t at = 0; at < stream.size(); at += kRead)
      copy.append(std::string_view(stream).substr(at, kRead));
    copy_seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
  }
  const double copying = Median(copy_seconds);
  // The framer as a watch uses it (the widest scan the CPU has), and with
  // SSE2 only, the x86-64 baseline.
  for (auto [scan, name] : {std::pair{rest::JsonFramer::Scan::kWidest, "widest scan"},
                            std::pair{rest::JsonFramer::Scan::kSse2, "SSE2"}}) {
    std::vector<double> frame_seconds;
    size_t frames = 0;
    for (int r = 0; r < runs; ++r) {
      auto start = Clock::now();
      rest::JsonFramer framer(stream.size(), scan);
      frames = 0;
      for (size_t at = 0; at < stream.size(); at += kRead) {
        framer.Append(std::string_view(stream).substr(at, kRead));
        for (;;) {
          StatusOr<std::optional<std::string_view>> f = framer.Next();
          if (!f.ok()) return f.status().WithContext("framing the synthetic watch stream");
          if (!*f) break;
          ++frames;
        }
      }
      frame_seconds.push_back(std::chrono::duration<double>(Clock::now() - start).count());
    }
    if (frames != docs.size()) {
      return Status::Internal("framed " + std::to_string(frames) + " events of " +
                              std::to_string(docs.size()));
    }
    const double framing = Median(frame_seconds);
    char line[256];
    std::snprintf(line, sizeof line,
                  "watch stream framing (JsonFramer, %s, 16 KiB reads): %.1f MB/s, %.2f "
                  "us/event; appending the same bytes: %.1f MB/s; ratio %.2f\n",
                  name, stream.size() / framing / 1e6, framing * 1e6 / frames,
                  stream.size() / copying / 1e6, copying / framing);
    out << line;
  }
  return Status::OK();
}

}  // namespace

Status RunDecodeBench(const DecodeBenchOptions& options, std::ostream& out) {
  if (options.objects <= 0 || options.runs <= 0) {
    return Status::InvalidArgument("--objects and --runs must be positive");
  }
  std::vector<std::string> docs;
  size_t bytes = 0;
  for (int i = 0; i < options.objects; ++i) {
    docs.push_back(
        serve::synth::PodJson({}, static_cast<uint64_t>(i), 1000 + static_cast<uint64_t>(i)));
    bytes += docs.back().size();
  }
  // Every method must accept every document before anything is timed.
  for (const std::string& d : docs) {
    StatusOr<ObjectPtr> o = Object::Parse(d);
    if (!o.ok()) return o.status().WithContext("synthetic pod does not parse");
  }

  char line[256];
  std::snprintf(line, sizeof line,
                "decode: %d realistic pods, %.0f bytes each on average, %d runs, medians\n",
                options.objects, double(bytes) / options.objects, options.runs);
  out << line;
  std::snprintf(line, sizeof line, "%-42s %10s %12s %9s %14s\n", "method", "MB/s", "objects/s",
                "x nlohmann", "heap/object");
  out << line;
  double baseline = 0;
  for (const Method& m : Methods()) DecodeRow(m, docs, bytes, options.runs, &baseline, out);
  return FramingRows(docs, options.runs, out);
}

}  // namespace kcache::bench
