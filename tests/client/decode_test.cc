// SPDX-License-Identifier: Apache-2.0

// Watch framing and decoding, list decoding, and HTTP errors as Status.
#include <gtest/gtest.h>

#include <functional>
#include <random>

#include "client/decode.h"
#include "client/http_error.h"
#include "client/json_framer.h"
#include "kcache/rest_client.h"
#include "testing/status_matchers.h"

namespace kcache::rest {
namespace {

const char kStream[] =
    "{\"type\":\"ADDED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{\"name\":"
    "\"a\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"10\",\"annotations\":{\"x\":\"}{\\\"\"}}}}\n"
    "  "
    "{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"name\":\"a\","
    "\"namespace\":\"ns\",\"resourceVersion\":\"11\"},\"data\":[1,{\"b\":\"]\"}]}}"
    "{\"type\":\"BOOKMARK\",\"object\":{\"kind\":\"Pod\",\"apiVersion\":\"v1\",\"metadata\":{"
    "\"resourceVersion\":\"12\",\"annotations\":{\"k8s.io/initial-events-end\":\"true\"}}}}\n";

// How pieces reach the framer: copied from a view, or taken as strings
// (only a frame begun in an earlier piece is copied).
enum class Feed { kCopy, kTake };

std::vector<std::string> FrameAll(const std::vector<std::string_view>& pieces,
                                  JsonFramer::Scan scan = JsonFramer::Scan::kWidest,
                                  Feed feed = Feed::kCopy) {
  JsonFramer framer(1 << 20, scan);
  std::vector<std::string> frames;
  std::string taken;
  for (auto piece : pieces) {
    if (feed == Feed::kTake) {
      taken.assign(piece);
      framer.Append(&taken);
      EXPECT_TRUE(taken.empty());
    } else {
      framer.Append(piece);
    }
    for (;;) {
      auto f = framer.Next();
      EXPECT_OK(f) << f.status();
      if (!f.ok() || !*f) break;
      frames.emplace_back(**f);
    }
  }
  EXPECT_FALSE(framer.InFrame());
  return frames;
}

// Events are found whatever the chunk boundaries: every split point of the
// stream into two pieces, and one byte at a time, give the same frames.
TEST(JsonFramerTest, FramesIndependentOfChunkBoundaries) {
  std::string_view all(kStream);
  std::vector<std::string> whole = FrameAll({all});
  ASSERT_EQ(whole.size(), 3u);
  EXPECT_EQ(whole[1].front(), '{');
  EXPECT_EQ(whole[1].back(), '}');
  for (Feed feed : {Feed::kCopy, Feed::kTake}) {
    const auto scan = JsonFramer::Scan::kWidest;
    for (size_t cut = 0; cut <= all.size(); ++cut) {
      EXPECT_EQ(FrameAll({all.substr(0, cut), all.substr(cut)}, scan, feed), whole)
          << "cut at " << cut << ", taken " << (feed == Feed::kTake);
    }
    std::vector<std::string_view> bytes;
    for (size_t i = 0; i < all.size(); ++i) bytes.push_back(all.substr(i, 1));
    EXPECT_EQ(FrameAll(bytes, scan, feed), whole);
  }
}

// Long strings are skipped a word at a time: escapes at every position of a
// word, and quotes and braces inside strings, end no frame early.
TEST(JsonFramerTest, EscapesAtEveryPositionOfLongStrings) {
  std::string stream;
  std::vector<std::string> events;
  for (size_t at = 0; at < 24; ++at) {
    for (std::string_view esc : {"\\\"", "\\\\", "\\u007d", "}{]["}) {
      std::string value(40, 'x');
      value.insert(at, esc);
      events.push_back("{\"type\":\"ADDED\",\"object\":{\"s\":\"" + value + "\",\"n\":[" +
                       std::to_string(at) + "]}}");
      stream += events.back() + (at % 2 ? "\n" : "");
    }
  }
  EXPECT_EQ(FrameAll({stream}), events);
  std::vector<std::string_view> pieces;  // every 7 bytes: cuts fall inside words
  for (size_t i = 0; i < stream.size(); i += 7)
    pieces.push_back(std::string_view(stream).substr(i, 7));
  EXPECT_EQ(FrameAll(pieces), events);
}

// Bytes are scanned a block of 64 at a time, and the last ones that do not
// fill a block one at a time: random events whose strings hold quotes,
// escapes and brackets, and whose nesting closes at any offset of a block,
// frame the same whole as in pieces of every size up to two blocks (so the
// two scans meet in every state), with blocks scanned by AVX2 (where the CPU
// has it), by SSE2, and byte by byte.
TEST(JsonFramerTest, RandomEventsFrameAlikeInBlocksAndByBytes) {
  std::mt19937 rng(7);
  auto pick = [&](int n) { return static_cast<int>(rng() % static_cast<unsigned>(n)); };
  const std::vector<std::string> in_string = {"a", "xyzw", "\\\"",    "\\\\", "{",  "}",
                                              "[", "]",    "\\u007b", " ",    "\\n"};
  std::function<std::string(int)> value = [&](int depth) -> std::string {
    switch (depth > 3 ? pick(2) : pick(4)) {
      case 0: {
        std::string s = "\"";
        for (int k = pick(12); k > 0; --k) s += in_string[pick(in_string.size())];
        return s + "\"";
      }
      case 1:
        return std::to_string(pick(100000));
      case 2: {
        std::string a = "[";
        for (int k = pick(4); k > 0; --k) a += value(depth + 1) + (k > 1 ? "," : "");
        return a + "]";
      }
      default: {
        std::string o = "{";
        for (int k = pick(4); k > 0; --k) {
          o += "\"k" + std::to_string(k) + "\":" + value(depth + 1) + (k > 1 ? "," : "");
        }
        return o + "}";
      }
    }
  };
  std::vector<std::string> events;
  std::string stream;
  for (int e = 0; e < 300; ++e) {
    events.push_back("{\"type\":\"ADDED\",\"object\":" + value(0) + "}");
    stream += events.back() + std::string(pick(3), pick(2) ? '\n' : ' ');
  }
  for (JsonFramer::Scan scan :
       {JsonFramer::Scan::kWidest, JsonFramer::Scan::kSse2, JsonFramer::Scan::kBytes}) {
    const int s = static_cast<int>(scan);
    EXPECT_EQ(FrameAll({stream}, scan), events) << "scan " << s;
    for (size_t piece = 1; piece <= 130; ++piece) {
      std::vector<std::string_view> pieces;
      for (size_t i = 0; i < stream.size(); i += piece)
        pieces.push_back(std::string_view(stream).substr(i, piece));
      EXPECT_EQ(FrameAll(pieces, scan), events) << "scan " << s << ", pieces of " << piece;
      EXPECT_EQ(FrameAll(pieces, scan, Feed::kTake), events)
          << "scan " << s << ", pieces of " << piece << " taken";
    }
  }
}

// A taken read that ends a frame begun in the one before gives that frame
// whole, at its offset in the stream, then its own frames; the bound holds
// for the frame made whole as for any, and errors after it name their
// offset in the stream.
TEST(JsonFramerTest, TakenReadsCarryTheFrameBegunBefore) {
  JsonFramer framer(24);
  std::string read = "{\"a\":1} {\"b\":";
  framer.Append(&read);
  EXPECT_TRUE(read.empty());
  auto a = framer.Next();
  ASSERT_TRUE(a.ok() && *a);
  EXPECT_EQ(**a, "{\"a\":1}");
  auto none = framer.Next();
  ASSERT_TRUE(none.ok() && !*none);
  EXPECT_TRUE(framer.InFrame());
  read = "\"}\"}{\"c\":3}\n x";
  framer.Append(&read);
  auto b = framer.Next();
  ASSERT_TRUE(b.ok() && *b) << b.status();
  EXPECT_EQ(**b, "{\"b\":\"}\"}");
  EXPECT_EQ(framer.frame_offset(), 8u);
  auto c = framer.Next();
  ASSERT_TRUE(c.ok() && *c) << c.status();
  EXPECT_EQ(**c, "{\"c\":3}");
  EXPECT_EQ(framer.frame_offset(), 17u);
  auto x = framer.Next();
  ASSERT_FALSE(x.ok());
  EXPECT_NE(x.status().message().find("byte 26"), std::string_view::npos) << x.status();

  JsonFramer bounded(16);
  read = "{\"a\":\"0123456789";
  bounded.Append(&read);
  ASSERT_TRUE(bounded.Next().ok());
  read = "\"}";
  bounded.Append(&read);
  auto over = bounded.Next();
  ASSERT_FALSE(over.ok());
  EXPECT_NE(over.status().message().find("at byte 0 exceeds 16 bytes"), std::string_view::npos)
      << over.status();
}

TEST(JsonFramerTest, GarbageBetweenEventsNamesItsOffset) {
  JsonFramer framer(1 << 20);
  framer.Append("{\"a\":1}\n x{");
  auto first = framer.Next();
  ASSERT_TRUE(first.ok() && *first);
  auto second = framer.Next();
  ASSERT_FALSE(second.ok());
  EXPECT_TRUE(second.status().IsInvalidArgument());
  EXPECT_NE(second.status().message().find("byte 9"), std::string_view::npos) << second.status();
}

TEST(JsonFramerTest, OversizedEventIsAnError) {
  JsonFramer framer(16);
  framer.Append("{\"a\":\"0123456789012345678901234567890\"");
  auto f = framer.Next();
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("exceeds 16 bytes"), std::string_view::npos);
}

// Found by watch_stream_fuzz: a frame over the bound that arrived whole in
// one read was returned, and refused when it arrived in pieces.
TEST(JsonFramerTest, OversizedEventIsAnErrorHoweverItArrives) {
  JsonFramer framer(16);
  framer.Append("{\"a\":\"0123456789012345678901234567890\"}");
  auto f = framer.Next();
  ASSERT_FALSE(f.ok());
  EXPECT_NE(f.status().message().find("exceeds 16 bytes"), std::string_view::npos) << f.status();
}

TEST(DecodeWatchEventTest, DecodesTypesAndObjects) {
  auto frames = FrameAll({kStream});
  auto added = DecodeWatchEvent(frames[0], 0, {}, "WATCH /api/v1/pods");
  ASSERT_OK(added) << added.status();
  EXPECT_EQ(added->type, WatchEventType::kAdded);
  EXPECT_EQ(added->object->name(), "a");
  EXPECT_EQ(added->object->resource_version(), "10");
  auto modified = DecodeWatchEvent(frames[1], 0, {}, "w");
  ASSERT_OK(modified);
  EXPECT_EQ(modified->type, WatchEventType::kModified);
  EXPECT_NE(modified->object->json().find("\"data\":[1,{\"b\":\"]\"}]"), std::string_view::npos);
  auto bookmark = DecodeWatchEvent(frames[2], 0, {}, "w");
  ASSERT_OK(bookmark);
  EXPECT_EQ(bookmark->type, WatchEventType::kBookmark);
  EXPECT_TRUE(bookmark->IsInitialEventsEnd());
  EXPECT_FALSE(added->IsInitialEventsEnd());
}

// protocol.md 4.4: an ERROR event carries a Status; 410 must be told apart.
TEST(DecodeWatchEventTest, ErrorEventBecomesItsStatus) {
  auto st = DecodeWatchEvent(
      R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"too old resource version: 100 (200)","reason":"Expired","code":410}})j",
      0, {}, "WATCH /api/v1/pods");
  ASSERT_FALSE(st.ok());
  EXPECT_TRUE(st.status().IsExpired());
  ASSERT_NE(st.status().http_error(), nullptr);
  EXPECT_EQ(st.status().http_error()->http_code, 410);
  EXPECT_EQ(st.status().http_error()->reason, "Expired");
  EXPECT_EQ(st.status().message(),
            "WATCH /api/v1/pods: too old resource version: 100 (200) (HTTP 410 Expired)");

  auto gone = DecodeWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","reason":"Gone","code":410}})", 0, {}, "w");
  EXPECT_TRUE(gone.status().IsExpired());
  auto internal = DecodeWatchEvent(
      R"({"type":"ERROR","object":{"kind":"Status","reason":"InternalError","code":500,"message":"boom"}})",
      0, {}, "w");
  EXPECT_EQ(internal.status().code(), StatusCode::kInternal);
}

TEST(DecodeWatchEventTest, RejectsUnknownTypesAndMalformedObjects) {
  auto unknown = DecodeWatchEvent(R"({"type":"RENAMED","object":{"metadata":{}}})", 0, {}, "w");
  ASSERT_FALSE(unknown.ok());
  EXPECT_NE(unknown.status().message().find("got invalid watch event type: RENAMED"),
            std::string_view::npos);
  // The stream offset of the bad byte: 1000 + 25 (the object's start) + 23.
  auto malformed =
      DecodeWatchEvent(R"({"type":"ADDED","object":{"metadata":{"name":tru}}})", 1000, {}, "w");
  ASSERT_FALSE(malformed.ok());
  EXPECT_TRUE(malformed.status().IsInvalidArgument());
  EXPECT_NE(malformed.status().message().find("malformed JSON at byte 1048"),
            std::string_view::npos)
      << malformed.status();
}

// Frames in the API server's own spelling are split without a first parse;
// any other frame must decode the same way through the general path.
TEST(DecodeWatchEventTest, OtherSpellingsDecodeAsTheCommonOne) {
  const std::string object = R"({"metadata":{"name":"a","resourceVersion":"5"}})";
  for (std::string frame : {R"({"type":"ADDED","object":)" + object + "}",
                            R"({ "type" : "ADDED", "object" : )" + object + " }",
                            R"({"object":)" + object + R"(,"type":"ADDED"})",
                            R"({"type":"ADDED","object":)" + object + R"(,"extra":{"b":2}})",
                            R"({"type":"ADDED","object":)" + object + "\n}"}) {
    auto ev = DecodeWatchEvent(frame, 0, {}, "w");
    ASSERT_OK(ev) << frame << ": " << ev.status();
    EXPECT_EQ(ev->type, WatchEventType::kAdded) << frame;
    EXPECT_EQ(ev->object->json(), object) << frame;
  }
}

TEST(DecodeListTest, ItemsGetTheListsKindAndApiVersion) {
  auto list = DecodeList(
      R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"77","continue":"abc","remainingItemCount":5},
          "items":[{"metadata":{"name":"a","namespace":"n","resourceVersion":"3"}},
                   {"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"n"}},{}]})",
      {});
  ASSERT_OK(list) << list.status();
  EXPECT_EQ(list->resource_version, "77");
  EXPECT_EQ(list->continue_token, "abc");
  EXPECT_EQ(list->remaining_item_count, 5);
  ASSERT_EQ(list->items.size(), 3u);
  EXPECT_EQ(list->items[0]->kind(), "Pod");
  EXPECT_EQ(list->items[0]->api_version(), "v1");
  EXPECT_EQ(list->items[0]->json().substr(0, 31),
            std::string_view(R"({"apiVersion":"v1","kind":"Pod")"));
  EXPECT_EQ(list->items[1]->json(),
            R"({"kind":"Pod","apiVersion":"v1","metadata":{"name":"b","namespace":"n"}})");
  EXPECT_EQ(list->items[2]->json(), R"({"apiVersion":"v1","kind":"Pod"})");
  // The stored bytes parse again to the same object.
  auto again = Object::Parse(std::string(list->items[0]->json()));
  ASSERT_OK(again);
  EXPECT_EQ(again.value()->name(), "a");
}

TEST(DecodeListTest, MalformedListNamesTheByte) {
  auto list = DecodeList(R"({"kind":"PodList","items":[{"metadata":{}},]})", {});
  ASSERT_FALSE(list.ok());
  EXPECT_NE(list.status().message().find("list response"), std::string_view::npos) << list.status();
  EXPECT_NE(list.status().message().find("byte"), std::string_view::npos) << list.status();
}

// Found by list_fuzz: "items" holding a bad literal threw from inside the
// decoder instead of being an error.
TEST(DecodeListTest, BadLiteralAsItemsIsAnError) {
  for (const char* body :
       {R"({"kind":"PodList","items": nd})", R"({"items": nulx})", R"({"items": tru})"}) {
    auto list = DecodeList(body, {});
    ASSERT_FALSE(list.ok()) << body;
    EXPECT_NE(list.status().message().find("list response"), std::string_view::npos)
        << list.status();
  }
  auto list = DecodeList(R"({"kind":"PodList","items":null})", {});
  ASSERT_OK(list) << list.status();
  EXPECT_TRUE(list->items.empty());
}

TEST(HttpErrorTest, JsonStatusBody) {
  Status st = StatusFromResponse(
      403,
      R"({"kind":"Status","apiVersion":"v1","metadata":{},"status":"Failure","message":"pods is forbidden: User \"x\" cannot list resource \"pods\"","reason":"Forbidden","details":{"kind":"pods"},"code":403})",
      std::nullopt, "LIST /api/v1/pods");
  EXPECT_EQ(st.code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(st.message(),
            "LIST /api/v1/pods: pods is forbidden: User \"x\" cannot list resource \"pods\" (HTTP "
            "403 Forbidden)");
  EXPECT_EQ(st.http_error()->reason, "Forbidden");
}

TEST(HttpErrorTest, PlainTextBodiesAndRetryAfter) {
  Status nf =
      StatusFromResponse(404, "404 page not found\n", std::nullopt, "GET /apis/x/v1/things");
  EXPECT_TRUE(nf.IsNotFound());
  EXPECT_EQ(nf.message(), "GET /apis/x/v1/things: 404 page not found (HTTP 404 NotFound)");
  Status busy = StatusFromResponse(429, "Too many requests, please try again later.\n", 3, "w");
  EXPECT_EQ(busy.code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(busy.http_error()->retry_after_seconds, 3);
  Status unauthorized = StatusFromResponse(401, "", std::nullopt, "w");
  EXPECT_EQ(unauthorized.code(), StatusCode::kUnauthenticated);
  EXPECT_NE(unauthorized.message().find("provide credentials"), std::string_view::npos);
  Status expired_continue = StatusFromResponse(
      410,
      R"({"kind":"Status","metadata":{"continue":"next"},"reason":"Expired","code":410,"message":"The provided continue parameter is too old"})",
      std::nullopt, "w");
  EXPECT_TRUE(expired_continue.IsExpired());
  EXPECT_EQ(expired_continue.http_error()->continue_token, "next");
  EXPECT_EQ(StatusFromResponse(503, "", 5, "w").code(), StatusCode::kUnavailable);
  EXPECT_EQ(StatusFromResponse(504, "", std::nullopt, "w").code(), StatusCode::kDeadlineExceeded);
  EXPECT_EQ(StatusFromResponse(422, "", std::nullopt, "w").code(), StatusCode::kInvalidArgument);
}

// details.causes are kept, so that decisions rest on them: the three forms
// in which servers have said "too large resource version".
TEST(HttpErrorTest, CausesAreKeptAndTooLargeResourceVersionIsRecognised) {
  Status by_type = StatusFromErrorEvent(
      R"({"kind":"Status","status":"Failure","message":"resourceVersion 40 not reached","reason":"Timeout","details":{"causes":[{"reason":"ResourceVersionTooLarge","message":"Too large resource version","field":"metadata.resourceVersion"}],"retryAfterSeconds":1},"code":504})",
      "watch pods");
  ASSERT_NE(by_type.http_error(), nullptr);
  ASSERT_EQ(by_type.http_error()->causes.size(), 1u);
  EXPECT_EQ(by_type.http_error()->causes[0],
            (StatusCause{"ResourceVersionTooLarge", "Too large resource version",
                         "metadata.resourceVersion"}));
  EXPECT_TRUE(by_type.http_error()->HasCause("ResourceVersionTooLarge"));
  EXPECT_TRUE(IsTooLargeResourceVersion(by_type));

  Status by_cause_message = StatusFromResponse(
      504,
      R"({"kind":"Status","reason":"Timeout","code":504,"message":"wait timed out","details":{"causes":[{"message":"Too large resource version"}]}})",
      std::nullopt, "LIST pods");
  EXPECT_TRUE(IsTooLargeResourceVersion(by_cause_message));
  Status by_message = StatusFromResponse(
      504,
      R"({"kind":"Status","reason":"Timeout","code":504,"message":"Timeout: Too large resource version: 40, current: 30"})",
      std::nullopt, "LIST pods");
  EXPECT_TRUE(IsTooLargeResourceVersion(by_message));

  // The text alone, without a Timeout, decides nothing.
  Status not_timeout = StatusFromResponse(
      500,
      R"({"kind":"Status","reason":"InternalError","code":500,"message":"Too large resource version"})",
      std::nullopt, "LIST pods");
  EXPECT_FALSE(IsTooLargeResourceVersion(not_timeout));
  EXPECT_FALSE(IsTooLargeResourceVersion(Status::Internal("Too large resource version")));
  EXPECT_FALSE(IsTooLargeResourceVersion(StatusFromResponse(504, "", std::nullopt, "w")));
}

TEST(EncodeListOptionsTest, EscapesAndOmitsUnset) {
  ListOptions o;
  o.label_selector = "app=web,env in (a,b)";
  o.resource_version = "0";
  o.limit = 500;
  o.timeout_seconds = 300;
  o.allow_watch_bookmarks = true;
  EXPECT_EQ(
      EncodeListOptions(o, true),
      "watch=true&labelSelector=app%3Dweb%2Cenv%20in%20%28a%2Cb%29&resourceVersion=0&limit=500&"
      "timeoutSeconds=300&allowWatchBookmarks=true");
  EXPECT_EQ(EncodeListOptions(ListOptions{}, false), "");
}

TEST(ResourceRefTest, CollectionPaths) {
  EXPECT_EQ((ResourceRef{{"", "v1", "pods"}, true, ""}).CollectionPath(), "/api/v1/pods");
  EXPECT_EQ((ResourceRef{{"", "v1", "pods"}, true, "ns"}).CollectionPath(),
            "/api/v1/namespaces/ns/pods");
  EXPECT_EQ((ResourceRef{{"apps", "v1", "deployments"}, true, ""}).CollectionPath(),
            "/apis/apps/v1/deployments");
  EXPECT_EQ((ResourceRef{{"", "v1", "nodes"}, false, "ignored"}).CollectionPath(), "/api/v1/nodes");
}

}  // namespace
}  // namespace kcache::rest
