// SPDX-License-Identifier: Apache-2.0

// RestClient against a scripted HTTP server: streams cut anywhere, errors,
// retries, cancellation, back-pressure, and the credentials each request
// carries.
#include <signal.h>
#include <sys/stat.h>

#include <atomic>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "kcache/rest_client.h"
#include "testing/fake_http_server.h"
#include "testing/status_matchers.h"
#include "testing/temp_dir.h"

namespace kcache {
namespace {

using testing::FakeHttpServer;
using testing::FakeRequest;
using testing::FakeResponse;

const ResourceRef kPods{{"", "v1", "pods"}, true, ""};

std::string PodEvent(const std::string& type, const std::string& name, int rv) {
  return R"({"type":")" + type +
         R"(","object":{"kind":"Pod","apiVersion":"v1","metadata":{"name":")" + name +
         R"(","namespace":"default","resourceVersion":")" + std::to_string(rv) + R"("}}})" + "\n";
}

std::shared_ptr<RestClient> Client(const std::string& url, RestClientOptions options = {}) {
  RestConfig config;
  config.server = url;
  auto client = RestClient::Create(config, options);
  EXPECT_OK(client) << client.status();
  return *client;
}

// Splits `s` into pieces of `n` bytes.
std::vector<std::string> Pieces(const std::string& s, size_t n) {
  std::vector<std::string> out;
  for (size_t i = 0; i < s.size(); i += n) out.push_back(s.substr(i, n));
  return out;
}

TEST(RestClientTest, WatchDecodesEventsSplitAcrossChunks) {
  std::string stream =
      PodEvent("ADDED", "a", 5) + PodEvent("MODIFIED", "a", 6) + PodEvent("DELETED", "a", 7);
  FakeHttpServer server(
      [&](const FakeRequest&) { return FakeResponse{.chunks = Pieces(stream, 7)}; });
  auto client = Client(server.url());
  ListOptions o;
  o.resource_version = "4";
  o.allow_watch_bookmarks = true;
  auto watch = client->Watch(kPods, o);
  ASSERT_OK(watch) << watch.status();
  std::vector<std::string> seen;
  for (;;) {
    auto ev = (*watch)->Next();
    ASSERT_OK(ev) << ev.status();
    if (!*ev) break;
    seen.push_back(std::string(WatchEventTypeName((*ev)->type)) + " " +
                   (*ev)->object->resource_version());
  }
  EXPECT_EQ(seen, (std::vector<std::string>{"ADDED 5", "MODIFIED 6", "DELETED 7"}));
  ASSERT_EQ(server.requests().size(), 1u);
  EXPECT_EQ(server.requests()[0].target,
            "/api/v1/pods?watch=true&resourceVersion=4&allowWatchBookmarks=true");
  EXPECT_EQ(server.requests()[0].Header("Accept"), "application/json");
}

TEST(RestClientTest, StreamCutInsideAnEventIsUnavailable) {
  std::string first = PodEvent("ADDED", "a", 5);
  std::string second = PodEvent("ADDED", "b", 6);
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{.chunks = {first, second.substr(0, 20)}, .cut = true};
  });
  auto watch = Client(server.url())->Watch(kPods, {});
  ASSERT_OK(watch) << watch.status();
  auto ev = (*watch)->Next();
  ASSERT_TRUE(ev.ok() && *ev);
  auto cut = (*watch)->Next();
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.status().code(), StatusCode::kUnavailable);
  // The cut event began right after the first one.
  EXPECT_NE(cut.status().message().find("at byte " + std::to_string(first.size())),
            std::string_view::npos)
      << cut.status();
  EXPECT_FALSE((*watch)->Next().ok());  // stays failed
}

TEST(RestClientTest, MalformedEventNamesTheStreamByte) {
  std::string first = PodEvent("ADDED", "a", 5);
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{
        .chunks = {first, R"({"type":"ADDED","object":{"metadata":{"name":nul}}})"}};
  });
  auto watch = Client(server.url())->Watch(kPods, {});
  ASSERT_OK(watch);
  ASSERT_OK((*watch)->Next());
  auto bad = (*watch)->Next();  // the object starts 25 bytes in; its '}' after "nul" is 23 further
  ASSERT_FALSE(bad.ok());
  EXPECT_TRUE(bad.status().IsInvalidArgument());
  EXPECT_NE(
      bad.status().message().find("malformed JSON at byte " + std::to_string(first.size() + 48)),
      std::string_view::npos)
      << bad.status();
}

TEST(RestClientTest, ErrorEventInsideTheStream) {
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{
        .chunks = {
            R"j({"type":"ERROR","object":{"kind":"Status","apiVersion":"v1","status":"Failure","message":"too old resource version: 1 (50)","reason":"Expired","code":410}})j"}};
  });
  auto watch = Client(server.url())->Watch(kPods, {});
  ASSERT_OK(watch);
  auto ev = (*watch)->Next();
  ASSERT_FALSE(ev.ok());
  EXPECT_TRUE(ev.status().IsExpired());
  EXPECT_EQ(ev.status().http_error()->http_code, 410);
}

TEST(RestClientTest, WatchOpenErrorsAreStatuses) {
  FakeHttpServer server([&](const FakeRequest& r) {
    if (r.target.starts_with("/api/v1/pods")) {
      return FakeResponse{.status = 429,
                          .headers = {{"Retry-After", "3"}, {"Content-Type", "text/plain"}},
                          .chunks = {"Too many requests, please try again later.\n"}};
    }
    return FakeResponse{.status = 404,
                        .headers = {{"Content-Type", "text/plain"}},
                        .chunks = {"404 page not found\n"}};
  });
  auto client = Client(server.url());
  auto busy = client->Watch(kPods, {});
  ASSERT_FALSE(busy.ok());
  EXPECT_EQ(busy.status().code(), StatusCode::kResourceExhausted);
  EXPECT_EQ(busy.status().http_error()->retry_after_seconds, 3);
  auto missing = client->Watch(ResourceRef{{"nope.io", "v1", "things"}, true, ""}, {});
  EXPECT_TRUE(missing.status().IsNotFound());
  EXPECT_NE(missing.status().message().find("404 page not found"), std::string_view::npos);
}

TEST(RestClientTest, ListRetriesWhenTheServerSaysRetryAfter) {
  std::atomic<int> calls{0};
  FakeHttpServer server([&](const FakeRequest&) {
    if (calls++ < 2) {
      return FakeResponse{
          .status = 503,
          .headers = {{"Retry-After", "0"}},
          .chunks = {
              R"({"kind":"Status","reason":"ServiceUnavailable","code":503,"message":"later"})"}};
    }
    return FakeResponse{
        .chunks = {
            R"({"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"9"},"items":[{"metadata":{"name":"p","namespace":"d"}}]})"}};
  });
  auto list = Client(server.url())->List(kPods, ListOptions{.limit = 10});
  ASSERT_OK(list) << list.status();
  EXPECT_EQ(calls.load(), 3);
  EXPECT_EQ(list->resource_version, "9");
  ASSERT_EQ(list->items.size(), 1u);
  EXPECT_EQ(list->items[0]->kind(), "Pod");

  // Without Retry-After, or past max_retries, the error is returned.
  calls = 0;
  auto no_retry = Client(server.url(), RestClientOptions{.max_retries = 1})->List(kPods, {});
  EXPECT_EQ(no_retry.status().code(), StatusCode::kUnavailable);
  EXPECT_EQ(calls.load(), 2);
}

TEST(RestClientTest, InternalErrorWithJsonStatus) {
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{
        .status = 500,
        .chunks = {
            R"({"kind":"Status","apiVersion":"v1","status":"Failure","message":"Internal error occurred: boom","reason":"InternalError","code":500})"}};
  });
  auto list = Client(server.url())->List(kPods, {});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), StatusCode::kInternal);
  EXPECT_EQ(list.status().message(),
            "LIST /api/v1/pods: Internal error occurred: boom (HTTP 500 InternalError)");
}

TEST(RestClientTest, CancelUnblocksAStalledWatch) {
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{.chunks = {PodEvent("ADDED", "a", 1)}, .stall = true};
  });
  auto watch = Client(server.url())->Watch(kPods, {});
  ASSERT_OK(watch);
  ASSERT_OK((*watch)->Next());
  std::thread canceller([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    (*watch)->Cancel();
  });
  auto ev = (*watch)->Next();  // blocks until cancelled
  canceller.join();
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), StatusCode::kCancelled);
}

// The client's watchdog: a watch that neither sends nor closes fails with
// DeadlineExceeded once its timeoutSeconds and the grace have passed, and
// says where it was.
TEST(RestClientTest, StalledWatchFailsAtItsDeadline) {
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{.chunks = {PodEvent("ADDED", "a", 1)}, .stall = true};
  });
  RestClientOptions o;
  o.watch_deadline_grace = std::chrono::milliseconds(200);
  ListOptions lo;
  lo.timeout_seconds = 1;
  const auto start = std::chrono::steady_clock::now();
  auto watch = Client(server.url(), o)->Watch(kPods, lo);
  ASSERT_OK(watch);
  ASSERT_OK((*watch)->Next());
  auto ev = (*watch)->Next();  // blocks until the deadline
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), StatusCode::kDeadlineExceeded) << ev.status();
  EXPECT_NE(ev.status().message().find("/api/v1/pods?"), std::string::npos) << ev.status();
  EXPECT_GE(waited, std::chrono::milliseconds(1200));
}

// A watch that asked for bookmarks and then receives nothing, no event and
// no bookmark, is given up after the client's idle timeout, not at its
// deadline: before, a resumed pods watch whose stream hung went unnoticed
// for 7.1 minutes (docs/reliability.md). Bytes that waited for a slow
// reader do not count as the server's silence.
TEST(RestClientTest, AWatchThatReceivesNothingForItsIdleTimeoutStalls) {
  FakeHttpServer server([&](const FakeRequest&) {
    return FakeResponse{.chunks = {PodEvent("ADDED", "a", 1), PodEvent("ADDED", "b", 2)},
                        .stall = true};
  });
  RestClientOptions o;
  o.watch_idle_timeout = std::chrono::milliseconds(300);
  ListOptions lo;
  lo.timeout_seconds = 600;
  lo.allow_watch_bookmarks = true;
  const auto start = std::chrono::steady_clock::now();
  auto watch = Client(server.url(), o)->Watch(kPods, lo);
  ASSERT_OK(watch);
  ASSERT_OK((*watch)->Next());
  std::this_thread::sleep_for(std::chrono::milliseconds(500));  // a slow reader
  auto second = (*watch)->Next();
  ASSERT_OK(second);
  ASSERT_TRUE(second->has_value());
  auto ev = (*watch)->Next();
  const auto waited = std::chrono::steady_clock::now() - start;
  ASSERT_FALSE(ev.ok());
  EXPECT_EQ(ev.status().code(), StatusCode::kDeadlineExceeded) << ev.status();
  EXPECT_EQ(ev.status().http_error(), nullptr);
  EXPECT_NE(ev.status().message().find("nothing received for 0.3 s: the stream stalled"),
            std::string::npos)
      << ev.status();
  EXPECT_LT(waited, std::chrono::seconds(10));

  // A watch without bookmarks has no idle limit: its deadline is the bound.
  lo.allow_watch_bookmarks = false;
  lo.timeout_seconds = 1;
  o.watch_deadline_grace = std::chrono::milliseconds(200);
  auto plain = Client(server.url(), o)->Watch(kPods, lo);
  ASSERT_OK(plain);
  ASSERT_OK((*plain)->Next());
  ASSERT_OK((*plain)->Next());
  const auto plain_start = std::chrono::steady_clock::now();
  auto end = (*plain)->Next();
  EXPECT_EQ(end.status().code(), StatusCode::kDeadlineExceeded) << end.status();
  EXPECT_EQ(end.status().message().find("nothing received"), std::string::npos) << end.status();
  EXPECT_GE(std::chrono::steady_clock::now() - plain_start, std::chrono::milliseconds(500));
}

// A stop requested on ListOptions::cancel ends a LIST whose body stalls,
// a wait for a Retry-After, and a watch whose headers never come, long
// before the request timeout (60 s here) would.
TEST(RestClientTest, AStopEndsAListOrWatchInFlight) {
  std::atomic<bool> throttle{false};
  FakeHttpServer server([&](const FakeRequest&) {
    if (throttle) {
      return FakeResponse{.status = 429,
                          .headers = {{"Retry-After", "50"}},
                          .chunks = {R"({"kind":"Status","code":429,"message":"later"})"}};
    }
    return FakeResponse{.chunks = {R"({"kind":"PodList","apiVersion":"v1","items":[)"},
                        .stall = true};
  });
  RestClientOptions o;
  o.request_timeout = std::chrono::seconds(60);
  o.max_retries = 5;
  o.max_retry_wait = std::chrono::seconds(60);
  auto client = Client(server.url(), o);
  for (bool retry_wait : {false, true}) {
    throttle = retry_wait;
    std::stop_source stop;
    std::jthread stopper([&] {
      std::this_thread::sleep_for(std::chrono::milliseconds(300));
      stop.request_stop();
    });
    const auto start = std::chrono::steady_clock::now();
    auto list = client->List(kPods, ListOptions{.limit = 1, .cancel = stop.get_token()});
    const auto waited = std::chrono::steady_clock::now() - start;
    ASSERT_FALSE(list.ok()) << "retry wait " << retry_wait;
    EXPECT_EQ(list.status().code(), StatusCode::kCancelled) << list.status();
    EXPECT_NE(list.status().message().find("/api/v1/pods?limit=1"), std::string::npos)
        << list.status();
    EXPECT_LT(waited, std::chrono::seconds(30)) << "retry wait " << retry_wait;
  }

  // A stop requested before the request starts ends it at once.
  throttle = false;
  std::stop_source stopped;
  stopped.request_stop();
  auto watch = client->Watch(kPods, ListOptions{.cancel = stopped.get_token()});
  ASSERT_FALSE(watch.ok());
  EXPECT_EQ(watch.status().code(), StatusCode::kCancelled) << watch.status();
}

// A stream far larger than the read-ahead bound arrives whole and in order
// while the transfer pauses and resumes.
TEST(RestClientTest, LongStreamWithSmallReadAhead) {
  std::vector<std::string> chunks;
  const int kEvents = 20000;
  for (int i = 0; i < kEvents; ++i)
    chunks.push_back(PodEvent("MODIFIED", "p" + std::to_string(i % 50), i + 1));
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{.chunks = chunks}; });
  auto watch =
      Client(server.url(), RestClientOptions{.watch_read_ahead_bytes = 4096})->Watch(kPods, {});
  ASSERT_OK(watch);
  int n = 0;
  for (;;) {
    auto ev = (*watch)->Next();
    ASSERT_OK(ev) << ev.status();
    if (!*ev) break;
    ++n;
    ASSERT_EQ((*ev)->object->resource_version(), std::to_string(n));
    if (n % 1000 == 0) std::this_thread::sleep_for(std::chrono::milliseconds(1));  // a slow reader
  }
  EXPECT_EQ(n, kEvents);
}

TEST(RestClientTest, CredentialsGoInTheAuthorizationHeader) {
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{.chunks = {"{}"}}; });
  RestConfig basic;
  basic.server = server.url();
  basic.username = "alice";
  basic.password = "s3cret";
  ASSERT_OK((*RestClient::Create(basic))->Get("/version"));
  EXPECT_EQ(server.requests().back().Header("Authorization"), "Basic YWxpY2U6czNjcmV0");

  RestConfig token = basic;
  token.bearer_token = "abc";
  ASSERT_OK((*RestClient::Create(token))->Get("/version"));
  EXPECT_EQ(server.requests().back().Header("Authorization"), "Bearer abc");
}

// A 401 makes the client read the token file again and retry once: a
// rotated token is picked up at once.
TEST(RestClientTest, TokenFileIsReReadOnUnauthorized) {
  testing::TempDir dir;
  std::string file = dir.Sub("token");
  std::ofstream(file) << "old\n";
  FakeHttpServer server([&](const FakeRequest& r) {
    if (r.Header("Authorization") != "Bearer new") return FakeResponse{.status = 401, .chunks = {}};
    return FakeResponse{.chunks = {"{}"}};
  });
  RestConfig config;
  config.server = server.url();
  config.bearer_token_file = file;
  auto client = *RestClient::Create(config);  // refresh period: one minute
  auto first = client->Get("/version");
  EXPECT_EQ(first.status().code(), StatusCode::kUnauthenticated);
  EXPECT_EQ(first.status().message().find("old"), std::string_view::npos) << "no secret in errors";
  std::ofstream(file) << "new\n";
  EXPECT_OK(client->Get("/version"));
  auto reqs = server.requests();
  ASSERT_EQ(reqs.size(),
            4u);  // old, old again after the re-read; then old, and new after the re-read
  EXPECT_EQ(reqs[2].Header("Authorization"), "Bearer old");
  EXPECT_EQ(reqs[3].Header("Authorization"), "Bearer new");
}

TEST(RestClientTest, TokenFileIsReReadAfterItsRefreshPeriod) {
  testing::TempDir dir;
  std::string file = dir.Sub("token");
  std::ofstream(file) << "one";
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{.chunks = {"{}"}}; });
  RestConfig config;
  config.server = server.url();
  config.bearer_token_file = file;
  auto client = *RestClient::Create(
      config, RestClientOptions{.token_file_refresh = std::chrono::milliseconds(0)});
  ASSERT_OK(client->Get("/a"));
  std::ofstream(file) << "two";
  ASSERT_OK(client->Get("/b"));
  EXPECT_EQ(server.requests()[0].Header("Authorization"), "Bearer one");
  EXPECT_EQ(server.requests()[1].Header("Authorization"), "Bearer two");
}

void WriteScript(const std::string& path, const std::string& body) {
  std::ofstream(path) << "#!/bin/sh\n" << body;
  chmod(path.c_str(), 0755);
}

TEST(RestClientTest, ExecPluginProvidesTheToken) {
  testing::TempDir dir;
  std::string plugin = dir.Sub("plugin");
  std::string count = dir.Sub("count");
  // The plugin checks that it was told its apiVersion, counts its runs and
  // prints a token with an expiry far ahead.
  WriteScript(
      plugin,
      "echo run >> " + count +
          "\n"
          "case \"$KUBERNETES_EXEC_INFO\" in *client.authentication.k8s.io/v1*) ;; *) exit 3;; "
          "esac\n"
          "[ \"$EXTRA\" = yes ] || exit 4\n"
          "echo '{\"apiVersion\":\"client.authentication.k8s.io/v1\",\"kind\":\"ExecCredential\","
          "\"status\":{\"token\":\"from-exec\",\"expirationTimestamp\":\"2999-01-01T00:00:00Z\"}}'"
          "\n");
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{.chunks = {"{}"}}; });
  RestConfig config;
  config.server = server.url();
  config.exec = ExecConfig{.command = plugin,
                           .env = {{"EXTRA", "yes"}},
                           .api_version = "client.authentication.k8s.io/v1"};
  auto client = *RestClient::Create(config);
  ASSERT_OK(client->Get("/a"));
  ASSERT_OK(client->Get("/b"));
  EXPECT_EQ(server.requests()[1].Header("Authorization"), "Bearer from-exec");
  std::ifstream in(count);
  std::string all((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  EXPECT_EQ(all, "run\n") << "the credential is cached until it expires";
}

TEST(RestClientTest, ExecPluginFailuresAreClearAndQuoteNoOutput) {
  testing::TempDir dir;
  std::string plugin = dir.Sub("plugin");
  WriteScript(plugin, "echo 'SECRET-ish garbage'\nexit 0\n");
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{.chunks = {"{}"}}; });
  RestConfig config;
  config.server = server.url();
  config.exec = ExecConfig{.command = plugin, .api_version = "client.authentication.k8s.io/v1"};
  auto bad_output = (*RestClient::Create(config))->Get("/a");
  ASSERT_FALSE(bad_output.ok());
  EXPECT_NE(bad_output.status().message().find("not an ExecCredential"), std::string_view::npos);
  EXPECT_EQ(bad_output.status().message().find("SECRET"), std::string_view::npos);

  WriteScript(plugin, "exit 7\n");
  auto failing = (*RestClient::Create(config))->Get("/a");
  EXPECT_NE(failing.status().message().find("exit status 7"), std::string_view::npos)
      << failing.status();

  config.exec->command = dir.Sub("missing-plugin");
  config.exec->install_hint = "install the missing plugin";
  auto missing = (*RestClient::Create(config))->Get("/a");
  EXPECT_NE(missing.status().message().find("install the missing plugin"), std::string_view::npos)
      << missing.status();
  EXPECT_TRUE(server.requests().empty()) << "no request goes out without credentials";
}

// A plugin that hangs (here: one that never exits, and one that closes its
// stdout and stays) fails its request at exec_timeout, naming the plugin,
// and is killed: the sync it serves does not hang with it.
TEST(RestClientTest, AHangingExecPluginIsKilledAtItsTimeout) {
  testing::TempDir dir;
  FakeHttpServer server([&](const FakeRequest&) { return FakeResponse{.chunks = {"{}"}}; });
  RestConfig config;
  config.server = server.url();
  const std::string pidfile = dir.Sub("pid");
  for (const std::string& body : {"echo $$ > " + pidfile + "\nexec sleep 600\n",
                                  "echo $$ > " + pidfile + "\nexec 1>&-\nexec sleep 600\n"}) {
    SCOPED_TRACE(body);
    std::string plugin = dir.Sub("plugin");
    WriteScript(plugin, body);
    config.exec = ExecConfig{.command = plugin, .api_version = "client.authentication.k8s.io/v1"};
    auto client = *RestClient::Create(
        config, RestClientOptions{.exec_timeout = std::chrono::milliseconds(500)});
    auto t0 = std::chrono::steady_clock::now();
    auto got = client->Get("/a");
    auto took = std::chrono::steady_clock::now() - t0;
    ASSERT_FALSE(got.ok());
    EXPECT_EQ(got.status().code(), StatusCode::kDeadlineExceeded) << got.status();
    EXPECT_NE(got.status().message().find("exec credential plugin " + plugin +
                                          ": still running after 0.5 s; killed"),
              std::string_view::npos)
        << got.status();
    EXPECT_GE(took, std::chrono::milliseconds(450));
    std::ifstream in(pidfile);
    pid_t pid = 0;
    in >> pid;
    ASSERT_GT(pid, 0);
    EXPECT_NE(kill(pid, 0), 0) << "the plugin still runs";
  }
  EXPECT_TRUE(server.requests().empty());
}

TEST(RestClientTest, ConnectionRefusedIsUnavailable) {
  std::string url;
  {
    FakeHttpServer gone([](const FakeRequest&) { return FakeResponse{}; });
    url = gone.url();
  }
  auto list = Client(url)->List(kPods, {});
  ASSERT_FALSE(list.ok());
  EXPECT_EQ(list.status().code(), StatusCode::kUnavailable) << list.status();
  EXPECT_NE(list.status().message().find("LIST /api/v1/pods"), std::string_view::npos)
      << list.status();
}

TEST(RestClientTest, BadServerUrls) {
  RestConfig config;
  EXPECT_TRUE(RestClient::Create(config).status().IsInvalidArgument());
  config.server = "ftp://host";
  EXPECT_TRUE(RestClient::Create(config).status().IsInvalidArgument());
  // A scheme with no host is not read as the bare host "http:".
  for (const char* no_host : {"http://", "https:///"}) {
    config.server = no_host;
    auto st = RestClient::Create(config).status();
    EXPECT_TRUE(st.IsInvalidArgument()) << st;
    EXPECT_EQ(st.message(), "server " + std::string(no_host) + ": no host");
  }
  config.server = "https://127.0.0.1:1";
  config.ca_file = "/nonexistent/ca.crt";
  auto missing_ca = RestClient::Create(config);
  EXPECT_TRUE(missing_ca.status().IsNotFound());
  EXPECT_NE(missing_ca.status().message().find("/nonexistent/ca.crt"), std::string_view::npos);
}

}  // namespace
}  // namespace kcache
