// SPDX-License-Identifier: Apache-2.0

#include "tools/kcache/metrics.h"

#include <cstdio>
#include <functional>
#include <optional>
#include <vector>

#include "core/resource_version.h"

namespace kcache::tool {
namespace {

// A label value with \, " and newlines escaped.
std::string Escape(const std::string& v) {
  std::string out;
  for (char c : v) {
    if (c == '\\' || c == '"') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out;
}

std::string Number(double v) {
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

// One metric family: its header, then a sample per informer (or handler).
class Family {
 public:
  Family(std::string* out, const char* name, const char* type, const char* help)
      : out_(out), name_(name) {
    *out_ += std::string("# HELP ") + name + " " + help + "\n# TYPE " + name + " " + type + "\n";
  }
  void Sample(const std::string& labels, double value, const char* suffix = "") {
    *out_ += name_ + suffix + "{" + labels + "} " + Number(value) + "\n";
  }

 private:
  std::string* out_;
  std::string name_;
};

}  // namespace

std::string RenderPrometheus(
    const std::map<std::string, std::shared_ptr<SharedIndexInformer>>& informers) {
  std::vector<std::pair<std::string, InformerMetrics>> all;
  for (const auto& [resource, informer] : informers) {
    all.emplace_back("resource=\"" + Escape(resource) + "\"", informer->Metrics());
  }
  std::string out;
  auto each = [&](Family f, const std::function<double(const InformerMetrics&)>& value) {
    for (const auto& [labels, m] : all) f.Sample(labels, value(m));
  };
  each(
      Family(&out, "kcache_informer_synced", "gauge", "1 once the store holds the server's state."),
      [](const InformerMetrics& m) { return m.synced ? 1 : 0; });
  {
    Family f(&out, "kcache_informer_store_resource_version", "gauge",
             "The store's committed resourceVersion, where it is a decimal integer.");
    for (const auto& [labels, m] : all) {
      if (std::optional<uint64_t> rv = ParseResourceVersion(m.resource_version)) {
        f.Sample(labels, static_cast<double>(*rv));
      }
    }
  }
  {
    Family f(&out, "kcache_reflector_seconds_failing", "gauge",
             "Seconds the reflector's lists and watches have been failing; absent while none "
             "has failed since the last that succeeded.");
    for (const auto& [labels, m] : all) {
      if (m.failing_for) f.Sample(labels, m.failing_for->count() / 1000.0);
    }
  }
  {
    Family f(&out, "kcache_informer_seconds_since_last_sync", "gauge",
             "Seconds since the store was last known current (a list, watch batch or bookmark "
             "applied, or a resume found current).");
    for (const auto& [labels, m] : all) {
      if (m.since_last_sync) f.Sample(labels, m.since_last_sync->count() / 1000.0);
    }
  }
  each(Family(&out, "kcache_reflector_lists_total", "counter", "Full lists applied."),
       [](const InformerMetrics& m) { return m.reflector.lists; });
  each(Family(&out, "kcache_reflector_list_requests_total", "counter",
              "LIST requests of full lists (pages)."),
       [](const InformerMetrics& m) { return m.reflector.list_requests; });
  each(Family(&out, "kcache_reflector_watches_total", "counter", "Watch requests opened."),
       [](const InformerMetrics& m) { return m.reflector.watches; });
  each(Family(&out, "kcache_reflector_events_total", "counter", "Watch events applied."),
       [](const InformerMetrics& m) { return m.reflector.events; });
  each(Family(&out, "kcache_reflector_listed_objects_total", "counter",
              "Objects received by full lists."),
       [](const InformerMetrics& m) { return m.reflector.listed_objects; });
  each(Family(&out, "kcache_reflector_listed_bytes_total", "counter",
              "JSON bytes of the objects received by full lists."),
       [](const InformerMetrics& m) { return m.reflector.listed_bytes; });
  each(Family(&out, "kcache_reflector_skipped_events_total", "counter",
              "Watch events not applied: not of the expected kind."),
       [](const InformerMetrics& m) { return m.reflector.skipped; });
  each(Family(&out, "kcache_reflector_stalled_watches_total", "counter",
              "Watches given up as stalled: nothing received for the idle timeout, or no "
              "close by their deadline."),
       [](const InformerMetrics& m) { return m.reflector.stalled_watches; });
  each(Family(&out, "kcache_reflector_bytes_total", "counter",
              "JSON bytes of listed objects and watch events."),
       [](const InformerMetrics& m) { return m.reflector.bytes; });
  {
    Family f(&out, "kcache_informer_queued_items", "gauge",
             "Notifications queued for a handler and not yet handled.");
    for (const auto& [labels, m] : all) {
      for (const HandlerMetrics& h : m.handlers) {
        f.Sample(labels + ",handler=\"" + Escape(h.name) + "\"", h.queued);
      }
    }
  }
  {
    Family f(&out, "kcache_informer_processing_latency_seconds", "histogram",
             "How long handler calls took.");
    for (const auto& [labels, m] : all) {
      for (const HandlerMetrics& h : m.handlers) {
        std::string hl = labels + ",handler=\"" + Escape(h.name) + "\"";
        uint64_t cumulative = 0;
        for (size_t b = 0; b < h.latency.buckets.size(); ++b) {
          cumulative += h.latency.buckets[b];
          std::string le =
              b < LatencyHistogram::kBounds.size() ? Number(LatencyHistogram::kBounds[b]) : "+Inf";
          f.Sample(hl + ",le=\"" + le + "\"", cumulative, "_bucket");
        }
        f.Sample(hl, h.latency.sum_seconds, "_sum");
        f.Sample(hl, h.latency.count, "_count");
      }
    }
  }
  return out;
}

Readiness CheckReadiness(
    const std::map<std::string, std::shared_ptr<SharedIndexInformer>>& informers,
    std::chrono::milliseconds unready_after, bool verbose) {
  Readiness out{true, ""};
  std::string lines;
  for (const auto& [name, informer] : informers) {
    const InformerMetrics m = informer->Metrics();
    std::string problem;
    if (m.failing_for && *m.failing_for > unready_after) {
      problem = "failing for " + std::to_string(m.failing_for->count() / 1000) + " s";
    } else if (!m.synced) {
      problem = "not synced";
    }
    if (!problem.empty()) out.ready = false;
    if (verbose || !problem.empty()) {
      lines += (problem.empty() ? "[+]" + name + " ok" : "[-]" + name + " " + problem) + "\n";
    }
  }
  if (out.ready && !verbose) {
    out.body = "ok";
  } else {
    out.body = lines + (out.ready ? "readyz check passed\n" : "readyz check failed\n");
  }
  return out;
}

}  // namespace kcache::tool
