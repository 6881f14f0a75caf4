// SPDX-License-Identifier: Apache-2.0

// The watch stream's framer and event decoder. Properties: the frames and
// the error do not depend on where the bytes are cut (the network may cut
// them anywhere), on whether the reads are copied or taken, or on how
// blocks are scanned, and a decoded event always holds an object.
#include <optional>
#include <string>
#include <vector>

#include "client/decode.h"
#include "client/json_framer.h"
#include "fuzz/fuzz.h"

namespace {

struct Framed {
  std::vector<std::string> frames;
  std::vector<uint64_t> offsets;
  std::string error;  // "" when the stream framed without one
  bool in_frame = false;
};

// Small enough that the fuzzer reaches the bound.
constexpr size_t kMaxFrame = 4096;

using Scan = kcache::rest::JsonFramer::Scan;

Framed Frame(std::string_view in, size_t chunk, Scan scan = Scan::kWidest, bool take = false) {
  Framed out;
  kcache::rest::JsonFramer framer(kMaxFrame, scan);
  std::string read;
  for (size_t at = 0; at < in.size() || at == 0; at += chunk) {
    if (take) {
      read.assign(in.substr(at, chunk));
      framer.Append(&read);
    } else {
      framer.Append(in.substr(at, chunk));
    }
    while (true) {
      auto next = framer.Next();
      if (!next.ok()) {
        out.error = next.status().ToString();
        return out;
      }
      if (!next->has_value()) break;
      out.frames.emplace_back(**next);
      out.offsets.push_back(framer.frame_offset());
    }
    if (in.empty()) break;
  }
  out.in_frame = framer.InFrame();
  return out;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using kcache::fuzz::Check;
  std::string_view in = kcache::fuzz::Bytes(data, size);
  Framed whole = Frame(in, in.size() + 1);
  if (!in.empty()) {
    Framed cut = Frame(in, 1 + data[0] % 13);
    Check(cut.frames == whole.frames && cut.offsets == whole.offsets,
          "frames depend on where the stream is cut");
    Check(cut.error == whole.error, "the framing error depends on where the stream is cut",
          whole.error + "\n" + cut.error);
    Check(cut.in_frame == whole.in_frame, "InFrame depends on where the stream is cut");
    Framed taken = Frame(in, 1 + data[0] % 13, Scan::kWidest, /*take=*/true);
    Check(taken.frames == whole.frames && taken.offsets == whole.offsets &&
              taken.error == whole.error && taken.in_frame == whole.in_frame,
          "reads taken frame differently from reads copied", whole.error + "\n" + taken.error);
    // Each way of scanning blocks frames alike.
    for (Scan scan : {Scan::kSse2, Scan::kBytes}) {
      Framed other = Frame(in, in.size() + 1, scan);
      Check(other.frames == whole.frames && other.offsets == whole.offsets &&
                other.error == whole.error && other.in_frame == whole.in_frame,
            "the scans of blocks frame differently");
    }
  }
  for (size_t i = 0; i < whole.frames.size(); i++) {
    kcache::ParseOptions options;
    options.drop_managed_fields = i % 2 == 1;
    auto event =
        kcache::rest::DecodeWatchEvent(whole.frames[i], whole.offsets[i], options, "fuzz watch");
    if (event.ok()) Check(event->object != nullptr, "an event without an object");
  }
  return 0;
}
